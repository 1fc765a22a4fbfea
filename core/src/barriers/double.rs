//! [`DistributedDoubleBarrier`]: Curator's double barrier — members enter together once
//! `member_qty` have arrived, and leave together.

use std::time::Duration;

use crate::client::{OrNone, Parents, Session};
use crate::wait::{self, Deadline, Wake};
use crate::{path, runtime, Client, CreateMode, Error, Result, Stat};

const READY_NODE: &str = "ready";

/// Curator's `DistributedDoubleBarrier`: [`enter`](Self::enter) waits until `member_qty`
/// members are in, [`leave`](Self::leave) until every member is out. `member_qty` is a
/// threshold, not a limit: late members pass at once while the round's `ready` node stands.
///
/// Node layout (Curator's): member `path/<uuid>` (ephemeral), `path/ready` (persistent). See
/// the [module notes](super) for the Curator failures avoided. One instance is one member; its
/// UUID stays the same for its life, so entering twice is the same membership.
#[derive(Debug)]
pub struct DistributedDoubleBarrier {
    client: Client,
    path: String,
    member_qty: usize,
    our_name: String,
    our_path: String,
    ready_path: String,
    /// The `ready` node this member entered through (its czxid and mzxid): `leave` deletes
    /// only that one, never a later round's (members of the next round may have made theirs
    /// while a slow leaver of this one had not yet deleted).
    entered_through: std::sync::Mutex<Option<(i64, i64)>>,
    /// The session on which an enter last answered `true`, until a leave begins: a member
    /// still in on that session stays in whatever entering again answers. (Not
    /// `entered_through`, which outlives a leave that timed out, and a session's end.)
    in_on_session: std::sync::Mutex<Option<i64>>,
    /// The delete of our node left by an enter dropped before it answered: the next enter
    /// waits for it, and makes the node again rather than take one about to go.
    dropped_enter: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// Deletes this member's node when an enter that made it is dropped before it answered.
struct NotIn<'a> {
    barrier: &'a DistributedDoubleBarrier,
    armed: bool,
}

impl Drop for NotIn<'_> {
    fn drop(&mut self) {
        if self.armed {
            let (client, path) = (self.barrier.client.clone(), self.barrier.our_path.clone());
            let delete = runtime::spawn(async move {
                let _ = client.delete_ours(&path).await;
            });
            *self
                .barrier
                .dropped_enter
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(delete);
        }
    }
}

impl DistributedDoubleBarrier {
    /// A member of the double barrier at `path` (validated) for `member_qty` (at least 1)
    /// members. Refuses a closed client.
    pub fn new(client: &Client, path: &str, member_qty: usize) -> Result<DistributedDoubleBarrier> {
        path::validate_path(path)?;
        if path == "/" {
            return Err(Error::invalid("a double barrier cannot be the root node"));
        }
        if member_qty == 0 || member_qty > i32::MAX as usize {
            return Err(Error::invalid(format!(
                "double barrier {path}: member_qty must be between 1 and {}, not {member_qty}",
                i32::MAX
            )));
        }
        client.ensure_open_for("DistributedDoubleBarrier", path)?;
        let our_name = uuid::Uuid::new_v4().to_string();
        Ok(DistributedDoubleBarrier {
            client: client.clone(),
            our_path: path::join(path, &our_name),
            ready_path: path::join(path, READY_NODE),
            path: path.to_string(),
            member_qty,
            our_name,
            entered_through: std::sync::Mutex::new(None),
            in_on_session: std::sync::Mutex::new(None),
            dropped_enter: std::sync::Mutex::new(None),
        })
    }

    /// The barrier's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The member count that opens the barrier.
    pub fn member_qty(&self) -> usize {
        self.member_qty
    }

    /// This member's node name (a UUID).
    pub fn member_name(&self) -> &str {
        &self.our_name
    }

    /// Enters: makes this member's node and waits, at most `timeout` (`None`: no limit), until
    /// `member_qty` members are in. `true` once a read shows the round's `ready` node (or shows
    /// enough members, after which this member makes `ready`); `false` on timeout, with this
    /// member's node deleted again. On an error the node is deleted too. Entering again is
    /// idempotent: a member already in stays in whatever the second enter answers (a timeout
    /// or an error does not take it out, or the others could leave without it).
    pub async fn enter(&self, timeout: Option<Duration>) -> Result<bool> {
        let deadline = Deadline::after(timeout);
        let dropped = self
            .dropped_enter
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(delete) = dropped {
            let _ = delete.await;
        }
        // Not in: a node left behind would count as a member (CURATOR-80) and open the barrier
        // one member short. Also when this call is dropped before it answers (a timeout around
        // it, a cancelled task), unless this member was in already (entering again).
        let already_in = *self.in_on_session.lock().unwrap_or_else(|e| e.into_inner())
            == Some(self.client.session_id());
        let mut not_in = NotIn {
            barrier: self,
            armed: !already_in,
        };
        let result = deadline.bounding(self.enter_until(deadline)).await;
        not_in.armed = false;
        // A member that was in stays in whatever its enter again says: leaving is `leave`'s.
        match result {
            Ok(false) if !already_in => self.client.delete_ours(&self.our_path).await?,
            Err(_) if !already_in => self.client.delete_ours_in_background(&self.our_path),
            Ok(true) => {
                *self.in_on_session.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(self.client.session_id());
            }
            _ => {}
        }
        result.map_err(|e| e.context(format!("enter double barrier {}", self.path)))
    }

    async fn enter_until(&self, deadline: Deadline) -> Result<bool> {
        let mut our_czxid = self.make_our_node().await?;
        loop {
            let mut states = wait::states(&self.client);
            let (ready_path, path) = (self.ready_path.as_str(), self.path.as_str());
            let (ready, ready_watch, children, children_watch) = self
                .client
                .retry(|s| async move {
                    let ready = s.exists_watch(ready_path);
                    let children = s.children_watch(path);
                    let (ready, children) = tokio::join!(ready, children);
                    let (stat, rw) = ready?;
                    let (c, cw) = children?;
                    Ok((stat, rw, c, cw))
                })
                .await?;
            let members: Vec<&String> = children.iter().filter(|c| *c != READY_NODE).collect();
            if !members.iter().any(|m| **m == self.our_name) {
                tracing::info!(path = %self.our_path, "double barrier: our member node is gone (session lost?); entering again");
                our_czxid = self.make_our_node().await?;
                continue;
            }
            if let Some(ready) = &ready {
                if self.ready_is_current(ready, our_czxid, &members).await? {
                    *self
                        .entered_through
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()) = Some((ready.czxid, ready.mzxid));
                    return Ok(true);
                }
            }
            if members.len() >= self.member_qty {
                if let Some(ready) = ready {
                    // A stale `ready` is made this round's by a write (its mzxid), never by a
                    // delete and a new create: a delete judged on a read (every `ready` is at
                    // version 0) could remove the `ready` another member has just made for
                    // this round, after a member that saw it entered and left.
                    tracing::warn!(path = %self.ready_path, mzxid = ready.mzxid, "double barrier: a stale ready node (older than every member) is made this round's");
                    self.client
                        .retry(|s| async move {
                            match s.set_data(ready_path, &[], Some(ready.version)).await {
                                Ok(_) | Err(Error::NoNode(_)) | Err(Error::BadVersion(_)) => Ok(()),
                                Err(e) => Err(e),
                            }
                        })
                        .await?;
                    continue; // answer only after reading it back
                }
                self.client
                    .retry(|s| async move {
                        match s.create(ready_path, &[], CreateMode::Persistent).await {
                            Ok(_) | Err(Error::NodeExists(_)) => Ok(()),
                            Err(e) => Err(e),
                        }
                    })
                    .await?;
                continue; // answer only after reading it back
            }
            if deadline.passed() {
                return Ok(false);
            }
            match wait::wait(
                &self.client,
                vec![ready_watch, children_watch],
                deadline,
                &mut states,
            )
            .await
            {
                Wake::Again => {}
                Wake::Deadline => return Ok(false),
                Wake::Closed => return Err(Error::closed()),
            }
        }
    }

    /// A `ready` node is this round's if it was made (or last written: a stale one made this
    /// round's) after some current member joined: after us, or after an earlier member (we are
    /// a late one). One older than every member is left over from a round whose members are
    /// all gone.
    async fn ready_is_current(
        &self,
        ready: &Stat,
        our_czxid: i64,
        members: &[&String],
    ) -> Result<bool> {
        if ready.mzxid > our_czxid {
            return Ok(true);
        }
        let base = self.path.as_str();
        let others: Vec<String> = members
            .iter()
            .filter(|m| ***m != self.our_name)
            .map(|m| path::join(base, m))
            .collect();
        let others = &others;
        self.client
            .retry(|s| async move {
                let stats: Vec<_> = others.iter().map(|p| s.exists(p)).collect();
                for st in stats {
                    if matches!(st.await?, Some(st) if st.czxid < ready.mzxid) {
                        return Ok(true);
                    }
                }
                Ok(false)
            })
            .await
    }

    /// Makes our member node, or finds it made by this session already; its czxid.
    async fn make_our_node(&self) -> Result<i64> {
        let our = self.our_path.as_str();
        self.client
            .retry(|s: Session| async move {
                loop {
                    let created = s.create_with_parents(
                        our,
                        &[],
                        CreateMode::Ephemeral,
                        None,
                        Parents::Containers,
                    );
                    match created.await {
                        Ok(c) => return Ok(c.stat.czxid),
                        Err(Error::NodeExists(_)) => match s.exists(our).await? {
                            // Ours already (a retried create, or entering twice): CURATOR-330.
                            Some(st) if s.owns(&st) => return Ok(st.czxid),
                            // Left by an earlier session of ours: it goes with that session.
                            Some(st) => match s.delete(our, Some(st.version)).await {
                                Ok(()) | Err(Error::NoNode(_)) => {}
                                Err(e) => return Err(e),
                            },
                            None => {}
                        },
                        Err(e) => return Err(e),
                    }
                }
            })
            .await
    }

    /// Leaves: deletes this member's node and waits, at most `timeout` (`None`: no limit),
    /// until every member has left. `true` once a read shows no member (and then the round's
    /// `ready` node is deleted); `false` on timeout (our node is gone either way).
    pub async fn leave(&self, timeout: Option<Duration>) -> Result<bool> {
        // On its way out: an enter from now on is a new membership.
        *self.in_on_session.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let deadline = Deadline::after(timeout);
        deadline
            .bounding(self.leave_until(deadline))
            .await
            .map_err(|e| e.context(format!("leave double barrier {}", self.path)))
    }

    async fn leave_until(&self, deadline: Deadline) -> Result<bool> {
        let (path, our) = (self.path.as_str(), self.our_path.as_str());
        let mut ours_exists = true;
        loop {
            let mut states = wait::states(&self.client);
            let children = self
                .client
                .retry(|s| async move { s.children(path).await.or_none() })
                .await?
                .unwrap_or_default();
            let mut members: Vec<String> =
                children.into_iter().filter(|c| c != READY_NODE).collect();
            members.sort();
            if members.is_empty() {
                break;
            }
            if !members.contains(&self.our_name) {
                ours_exists = false;
            }
            if members.len() == 1 && ours_exists {
                self.delete_ours().await?;
                break;
            }
            // Watch the highest member, then delete ours (Curator's order: the watch is set
            // before our delete can wake anyone).
            let highest = path::join(path, members.last().map(String::as_str).unwrap_or(""));
            let highest = highest.as_str();
            let (stat, watch) = self
                .client
                .retry(|s| async move { s.exists_watch(highest).await })
                .await?;
            if ours_exists {
                self.delete_ours().await?;
                ours_exists = false;
            }
            if stat.is_none() || highest == our {
                continue;
            }
            match wait::wait(&self.client, vec![watch], deadline, &mut states).await {
                Wake::Again => {}
                Wake::Deadline => return Ok(false),
                Wake::Closed => return Err(Error::closed()),
            }
            if deadline.passed() {
                return Ok(false);
            }
        }
        self.delete_ready().await?;
        Ok(true)
    }

    /// Deletes the round's `ready` node: the one this member entered through (Curator deletes
    /// whatever is there, which can be the next round's); without an enter, whatever is there.
    async fn delete_ready(&self) -> Result<()> {
        let ready = self.ready_path.as_str();
        // Forgotten only once the delete is done: a leave that failed or was dropped here and
        // is tried again must still delete only its own round's node.
        let through = *self
            .entered_through
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.client
            .retry(|s| async move {
                let version = match through {
                    None => None,
                    Some((czxid, mzxid)) => match s.exists(ready).await? {
                        Some(st) if st.czxid == czxid && st.mzxid == mzxid => Some(st.version),
                        // Gone, or another round's: not ours to delete.
                        _ => return Ok(()),
                    },
                };
                match s.delete(ready, version).await {
                    Ok(()) | Err(Error::NoNode(_)) | Err(Error::BadVersion(_)) => Ok(()),
                    Err(e) => Err(e),
                }
            })
            .await?;
        *self
            .entered_through
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
        Ok(())
    }

    async fn delete_ours(&self) -> Result<()> {
        let our = self.our_path.as_str();
        self.client
            .retry(|s| async move { s.delete(our, None).await.or_none().map(|_| ()) })
            .await
    }

    /// [`enter`](Self::enter) for the blocking face.
    pub fn enter_blocking(&self, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.enter(timeout))?
    }

    /// [`leave`](Self::leave) for the blocking face.
    pub fn leave_blocking(&self, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.leave(timeout))?
    }
}
