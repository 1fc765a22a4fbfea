//! Pieces shared by the latch, the selector and the observer: participants, close mode, node
//! names, reading a group.

use crate::client::{sequence, OrNone};
pub use crate::dispatch::ListenerId;
pub use crate::LostPolicy;
use crate::{path, Client, Error, Result};

/// Curator's `LeaderLatch.LOCK_NAME`.
pub(crate) const LATCH_NAME: &str = "latch-";
/// Curator's `LockInternals` lock name, used by LeaderSelector's mutex.
pub(crate) const LOCK_NAME: &str = "lock-";

/// A member of a leadership group, as read from its node (Curator's `Participant`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Participant {
    /// The participant id: the node's data, decoded as UTF-8 (invalid bytes become U+FFFD, as
    /// Java's `new String(bytes, "UTF-8")` does).
    pub id: String,
    /// Whether this participant leads (its node sorts first).
    pub is_leader: bool,
}

impl Participant {
    /// Curator's dummy `Participant("", false)`: what [`get_leader`](crate::leader::LeaderLatch::get_leader)
    /// returns when nobody takes part.
    pub fn none() -> Participant {
        Participant::default()
    }
}

/// How [`LeaderLatch::close`](crate::leader::LeaderLatch::close) treats the listeners (Curator's
/// `LeaderLatch.CloseMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CloseMode {
    /// Closing does not call `not_leader` (Curator's default).
    #[default]
    Silent,
    /// Closing while leading calls `not_leader`.
    NotifyLeader,
}

/// A change of leadership, for listeners (Curator's `LeaderLatchListener`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeadershipEvent {
    /// This participant became leader (`isLeader()`).
    IsLeader,
    /// This participant stopped being leader (`notLeader()`).
    NotLeader,
}

/// Checks a participant id: it is stored as node data and read back by every face, so it must
/// fit a node and must not contain NUL (C reads ids as NUL-terminated strings).
pub(crate) fn validate_id(id: &str) -> Result<()> {
    if id.len() > path::MAX_DATA_LEN {
        return Err(Error::invalid(format!(
            "participant id is {} bytes; the limit is {} bytes (it is stored as node data)",
            id.len(),
            path::MAX_DATA_LEN
        )));
    }
    if id.contains('\0') {
        return Err(Error::invalid(
            "participant id must not contain NUL characters",
        ));
    }
    Ok(())
}

/// Checks a leadership group path: a valid ZooKeeper path other than the root (the group's
/// nodes are its children, and the root's children are everyone's).
pub(crate) fn validate_group_path(what: &str, p: &str) -> Result<()> {
    path::validate_path(p).map_err(|e| Error::invalid(format!("{what} path: {}", e.message())))?;
    if p == "/" {
        return Err(Error::invalid(format!(
            "{what} path must not be the root \"/\": its participants are created as children of it"
        )));
    }
    Ok(())
}

/// The sort key for an observer, who may look at a latch (`latch-`) or a selector (`lock-`).
pub(crate) fn observer_key(name: &str) -> &str {
    if name.contains(LATCH_NAME) {
        sequence::key(name, LATCH_NAME)
    } else {
        sequence::key(name, LOCK_NAME)
    }
}

fn decode_id(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// Reads the participants of a group from its nodes' data, in node order, with pipelined reads.
/// The first node still present is flagged leader (Curator flags the first listed node even if
/// it vanished in between, leaving nobody flagged; the next node is the one about to lead).
pub(crate) async fn read_participants(
    client: &Client,
    group: &str,
    key: fn(&str) -> &str,
) -> Result<Vec<Participant>> {
    if client.is_closed() {
        return Err(Error::closed());
    }
    client
        .retry(|s| async move {
            let Some(mut children) = s.children(group).await.or_none()? else {
                return Ok(Vec::new());
            };
            sequence::sort_by(&mut children, key);
            // Requests go out in call order and one session's replies come back in order: all
            // the reads cost about one round trip.
            let reads: Vec<_> = children
                .iter()
                .map(|c| s.get_data(&path::join(group, c)))
                .collect();
            let mut out = Vec::with_capacity(children.len());
            for read in reads {
                if let Some((data, _)) = read.await.or_none()? {
                    out.push(Participant {
                        id: decode_id(&data),
                        is_leader: out.is_empty(),
                    });
                }
            }
            Ok(out)
        })
        .await
}

/// The leader of a group: the first node (in sort order) still present, or
/// `Participant("", false)` when there is none.
pub(crate) async fn read_leader(
    client: &Client,
    group: &str,
    key: fn(&str) -> &str,
) -> Result<Participant> {
    Ok(read_leader_node(client, group, key)
        .await?
        .map(|(_, p)| p)
        .unwrap_or_default())
}

/// Like [`read_leader`], also naming the leader's node.
pub(crate) async fn read_leader_node(
    client: &Client,
    group: &str,
    key: fn(&str) -> &str,
) -> Result<Option<(String, Participant)>> {
    if client.is_closed() {
        return Err(Error::closed());
    }
    client
        .retry(|s| async move {
            let Some(mut children) = s.children(group).await.or_none()? else {
                return Ok(None);
            };
            sequence::sort_by(&mut children, key);
            for child in children {
                if let Some((data, _)) = s.get_data(&path::join(group, &child)).await.or_none()? {
                    let leader = Participant {
                        id: decode_id(&data),
                        is_leader: true,
                    };
                    return Ok(Some((child, leader)));
                }
            }
            Ok(None)
        })
        .await
}

/// Our node in a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OurNode {
    /// The node name (no parent).
    pub(crate) name: String,
    /// Its czxid: the leadership epoch / fencing token.
    pub(crate) czxid: i64,
    /// The session that owns it.
    pub(crate) owner: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_on_the_text_after_the_last_lock_name() {
        let mut c = vec![
            "_c_b0000000-0000-4000-8000-000000000000-latch-0000000003".to_string(),
            "_c_a0000000-0000-4000-8000-000000000000-latch-0000000010".to_string(),
            "_c_f0000000-0000-4000-8000-000000000000-latch-0000000001".to_string(),
        ];
        sequence::sort(&mut c, LATCH_NAME);
        assert!(
            c[0].ends_with("0000000001")
                && c[1].ends_with("0000000003")
                && c[2].ends_with("0000000010")
        );
        assert_eq!(observer_key("_c_x-lock-0000000002"), "0000000002");
        assert_eq!(observer_key("_c_x-latch-0000000002"), "0000000002");
    }

    #[test]
    fn rejects_bad_ids_and_group_paths() {
        assert!(validate_id("").is_ok());
        assert!(validate_id("node-1 ✓").is_ok());
        assert!(matches!(
            validate_id("a\0b"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            validate_id(&"x".repeat(path::MAX_DATA_LEN + 1)),
            Err(Error::InvalidArgument(_))
        ));
        for p in ["", "/", "rel", "/a/", "/a//b"] {
            assert!(
                matches!(
                    validate_group_path("latch", p),
                    Err(Error::InvalidArgument(_))
                ),
                "{p:?}"
            );
        }
        assert!(validate_group_path("latch", "/a/b").is_ok());
    }

    #[test]
    fn policies_follow_curator() {
        use crate::ConnectionState::*;
        assert!(LostPolicy::Standard.is_error_state(Suspended));
        assert!(!LostPolicy::Session.is_error_state(Suspended));
        assert!(LostPolicy::Session.is_error_state(Lost));
        assert!(!LostPolicy::Standard.is_error_state(Reconnected));
    }
}
