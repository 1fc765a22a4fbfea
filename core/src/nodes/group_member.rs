//! [`GroupMember`]: Curator's GroupMember — this process's ephemeral node in a group, and the
//! group's membership.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::members::{Members, MembersView};
use super::persistent_node::PersistentNode;
use crate::client::CreateMode;
use crate::dispatch::{Dispatcher, ListenerId};
use crate::{path, runtime, Client, Error, Result};

/// Curator's GroupMember: registers this member as the ephemeral node `path/member_id` holding
/// its payload (a [`PersistentNode`], so it survives deletes, reconnects and session expiry),
/// and follows the group: [`current_members`](Self::current_members) maps every member id to
/// its payload, and change listeners hear each new membership.
///
/// The same id from two live sessions is refused: the second member's
/// [`start`](Self::start) fails with [`Error::Conflict`] and the first member's node is left
/// untouched (Curator lets the second one overwrite the node, and delete it when it closes).
/// Members written by Curator, and by every face of zkrecipes, share a group.
pub struct GroupMember {
    client: Client,
    path: String,
    id: String,
    node: PersistentNode,
    view: Mutex<Option<MembersView>>,
    dispatcher: Arc<Dispatcher<BTreeMap<String, Vec<u8>>>>,
}

impl std::fmt::Debug for GroupMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupMember")
            .field("path", &self.path)
            .field("id", &self.id)
            .finish()
    }
}

impl GroupMember {
    /// Member `member_id` of the group at `path`, with `payload`. Nothing happens on the
    /// server before [`start`](Self::start).
    ///
    /// Errors: `InvalidArgument` for a bad path, an id that is not a node name (empty, with
    /// `/`, `.` or `..`, NUL) or a payload over the request limit; `Closed` on a closed client.
    pub fn new(
        client: &Client,
        path: &str,
        member_id: &str,
        payload: &[u8],
    ) -> Result<GroupMember> {
        client.ensure_open_for("GroupMember", path)?;
        path::validate_path(path)?;
        if member_id.is_empty() || member_id.contains('/') {
            return Err(Error::invalid(format!(
                "member id {member_id:?} must be a node name: not empty, no '/'"
            )));
        }
        let node_path = path::join(path, member_id);
        path::validate_path(&node_path)
            .map_err(|e| Error::invalid(format!("member id {member_id:?}: {}", e.message())))?;
        let node = PersistentNode::new(client, &node_path, CreateMode::Ephemeral, payload, false)?;
        Ok(GroupMember {
            client: client.clone(),
            path: path.to_string(),
            id: member_id.to_string(),
            node,
            view: Mutex::new(None),
            dispatcher: Arc::new(Dispatcher::new()),
        })
    }

    /// The group path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// This member's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Joins the group and starts following it; returns once this member is registered.
    ///
    /// Errors: `Conflict` when another live session holds this id (its node untouched);
    /// `Timeout` when not registered within the client's connection timeout (it keeps
    /// trying in the background); `InvalidArgument` when started twice; `Closed` once closed.
    pub async fn start(&self) -> Result<()> {
        self.node.start()?;
        let dispatcher = self.dispatcher.clone();
        let view = MembersView::start(&self.client, &self.path, move |m: &Members| {
            dispatcher.emit(m.clone())
        })?;
        *self.view.lock().unwrap_or_else(|e| e.into_inner()) = Some(view);
        let timeout = self.client.connection_timeout();
        if self.node.wait_for_initial_create(Some(timeout)).await? {
            Ok(())
        } else {
            Err(Error::Timeout(
                format!(
                    "group member {} of {}: not registered within {timeout:?} (still trying)",
                    self.id, self.path
                )
                .into(),
            ))
        }
    }

    /// [`start`](Self::start) for the blocking face.
    pub fn start_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.start())?
    }

    /// Every member id → payload, as last read from the group; this member's own entry is
    /// its payload as read too, and its local payload only while the group read has none (as
    /// Curator's `getCurrentMembers`): a member refused with `Conflict` shows the payload of
    /// the node that holds its id, as every other member and listener sees it.
    pub fn current_members(&self) -> BTreeMap<String, Vec<u8>> {
        let mut members = self
            .view
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|v| v.current())
            .unwrap_or_default();
        members
            .entry(self.id.clone())
            .or_insert_with(|| self.node.data());
        members
    }

    /// Changes this member's payload (see [`PersistentNode::set_data`]: applied now when
    /// connected, else on the next create or reconnect).
    pub fn set_this_data(&self, payload: &[u8]) -> Result<()> {
        self.node.set_data(payload)
    }

    /// This member's node (its actual path, registration events, last error).
    pub fn node(&self) -> &PersistentNode {
        &self.node
    }

    /// Adds a listener that gets each new membership (member id → payload, as read from the
    /// group; this member appears once its node is seen); returns its id. Listeners run on
    /// the member's dispatcher ([`crate::dispatch`]).
    pub fn add_listener(
        &self,
        listener: impl Fn(&BTreeMap<String, Vec<u8>>) + Send + Sync + 'static,
    ) -> ListenerId {
        self.dispatcher.add(listener)
    }

    /// Removes a listener; whether it was there (`false` for one removed before).
    /// `InvalidArgument` for an id that another client or recipe gave out.
    pub fn remove_listener(&self, id: ListenerId) -> Result<bool> {
        self.dispatcher.remove(id)
    }

    /// Leaves the group: stops following it and deletes this member's node (ours only).
    /// Closing twice is fine.
    pub async fn close(&self) -> Result<()> {
        self.dispatcher.clear();
        let view = self.view.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(view) = view {
            view.stop();
        }
        self.node.close().await
    }

    /// [`close`](Self::close) for the blocking face.
    pub fn close_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.close())?
    }
}

impl Drop for GroupMember {
    fn drop(&mut self) {
        self.dispatcher.clear();
        if let Some(view) = self.view.lock().unwrap_or_else(|e| e.into_inner()).take() {
            view.stop();
        }
    }
}
