//! Nodes that stay put and groups that know their members (Curator's `nodes` package):
//! [`PersistentNode`], [`PersistentTtlNode`] and [`GroupMember`].
//!
//! Service registration — "this instance is alive, here is its address" — is a node that must
//! be there while its owner lives, whatever happens to connections and sessions, and that must
//! never take over or delete somebody else's registration. The three recipes keep Curator's
//! node layout (a member of a group is the ephemeral node `path/id` holding its payload; a TTL
//! node is a container with a `touch` child of the TTL), so Curator processes share groups with
//! ours, and add what Curator lacks: an existing ephemeral node of another live session is a
//! typed [`Conflict`](crate::Error::Conflict) and stays untouched; deletes are of our own node
//! only and version-checked; a protected sequential node is created again at the same path,
//! never piled up (CURATOR-190); the node is reinstated after any outage (CURATOR-97).

mod group_member;
mod members;
mod persistent_node;
mod ttl_node;

pub use self::group_member::GroupMember;
pub use self::persistent_node::{PersistentNode, PersistentNodeEvent, PersistentNodeEventKind};
pub use self::ttl_node::PersistentTtlNode;
