//! Curator's item names for the [`DistributedQueue`](super::DistributedQueue) family: the
//! kinds, what an item is put with, and how names are made, read and ordered.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::{path, Error, Result};

/// The name every item starts with.
pub(super) const ITEM_NAME: &str = "queue-";
const SEPARATOR: char = '|';

/// Which of Curator's queues: the item names and their order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueKind {
    /// `DistributedQueue`: `queue-<seq>`, by sequence.
    Queue,
    /// `DistributedIdQueue`: `queue-|<id>|<seq>`, by sequence.
    Id,
    /// `DistributedPriorityQueue`: `queue-<0|1><8 hex><seq>`, lower priority first.
    Priority,
    /// `DistributedDelayQueue`: `queue-|<hex epoch ms>|<seq>`, handed out once due.
    Delay,
}

impl QueueKind {
    /// Every kind.
    pub const ALL: &'static [QueueKind] = &[
        QueueKind::Queue,
        QueueKind::Id,
        QueueKind::Priority,
        QueueKind::Delay,
    ];

    /// The name every face uses: `QUEUE`, `ID`, `PRIORITY`, `DELAY`.
    pub const fn name(self) -> &'static str {
        match self {
            QueueKind::Queue => "QUEUE",
            QueueKind::Id => "ID",
            QueueKind::Priority => "PRIORITY",
            QueueKind::Delay => "DELAY",
        }
    }

    /// Curator's class name for the kind (`DistributedIdQueue`...), for messages.
    pub const fn recipe(self) -> &'static str {
        match self {
            QueueKind::Queue => "DistributedQueue",
            QueueKind::Id => "DistributedIdQueue",
            QueueKind::Priority => "DistributedPriorityQueue",
            QueueKind::Delay => "DistributedDelayQueue",
        }
    }

    /// The kind with this name (ASCII case-insensitive).
    pub fn from_name(name: &str) -> Result<QueueKind> {
        QueueKind::ALL
            .iter()
            .copied()
            .find(|k| k.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{name:?} is not a queue kind; expected QUEUE, ID, PRIORITY or DELAY"
                ))
            })
    }
}

/// What happens to an item whose consumer failed ([`Item::fail`](super::Item::fail)) on a
/// queue with a lock path: Curator's `ErrorMode`, set with `QueueOptions::error_mode` or
/// [`DistributedQueue::set_error_mode`](super::DistributedQueue::set_error_mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ErrorMode {
    /// The item goes back into the queue, at the tail (Curator's default): one transaction that
    /// checks the consumer's lock deletes the item and puts it again with its key.
    #[default]
    Requeue,
    /// The item is deleted, as if it had been completed.
    Delete,
}

impl ErrorMode {
    /// Every mode.
    pub const ALL: &'static [ErrorMode] = &[ErrorMode::Requeue, ErrorMode::Delete];

    /// The name every face uses: `REQUEUE`, `DELETE`.
    pub const fn name(self) -> &'static str {
        match self {
            ErrorMode::Requeue => "REQUEUE",
            ErrorMode::Delete => "DELETE",
        }
    }

    /// The mode with this name (ASCII case-insensitive).
    pub fn from_name(name: &str) -> Result<ErrorMode> {
        ErrorMode::ALL
            .iter()
            .copied()
            .find(|m| m.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{name:?} is not an error mode; expected REQUEUE or DELETE"
                ))
            })
    }
}

/// What an item is put with: nothing (a plain queue), or its kind's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKey<'a> {
    /// A [`QueueKind::Queue`] item.
    None,
    /// A [`QueueKind::Id`] item's id (not empty; `/` and `|` become `_`).
    Id(&'a str),
    /// A [`QueueKind::Priority`] item's priority (lower first).
    Priority(i32),
    /// A [`QueueKind::Delay`] item's time: milliseconds since the Unix epoch (positive).
    DelayUntil(i64),
}

/// The name an item of a `kind` queue at `queue` is put with (the server appends the
/// sequence); `InvalidArgument` for a key of another kind.
pub(super) fn item_name(kind: QueueKind, key: ItemKey<'_>, queue: &str) -> Result<String> {
    Ok(match (kind, key) {
        (QueueKind::Queue, ItemKey::None) => ITEM_NAME.to_string(),
        (QueueKind::Id, ItemKey::Id(id)) => {
            if id.is_empty() {
                return Err(Error::invalid("an item id must not be empty"));
            }
            let fixed = fix_id(id);
            path::validate_path(&format!("/{fixed}"))?;
            format!("{ITEM_NAME}{SEPARATOR}{fixed}{SEPARATOR}")
        }
        (QueueKind::Priority, ItemKey::Priority(p)) => {
            let sign = if p >= 0 { '1' } else { '0' };
            format!("{ITEM_NAME}{sign}{:08X}", p as u32)
        }
        (QueueKind::Delay, ItemKey::DelayUntil(ms)) => {
            if ms <= 0 {
                return Err(Error::invalid(format!(
                    "delay_until_epoch_ms must be positive, not {ms}"
                )));
            }
            format!("{ITEM_NAME}{SEPARATOR}{ms:08X}{SEPARATOR}")
        }
        (kind, key) => {
            return Err(Error::invalid(format!(
                "queue {}: a {} queue's items are not put with {key:?}",
                queue,
                kind.name()
            )))
        }
    })
}

/// The name an item is put again with (Curator's `makeRequeueItemPath`): the node's name
/// without the server's 10-digit sequence, so the item keeps its kind's key. Curator keeps only
/// the id queue's key (a requeued priority item comes back with none, a delay item as due at
/// once); we keep every kind's, so a requeued priority item keeps its priority.
pub(super) fn requeue_name(node: &str) -> String {
    const SEQUENCE_DIGITS: usize = 10;
    let cut = node.len().saturating_sub(SEQUENCE_DIGITS);
    match node.get(cut..) {
        Some(seq)
            if node.starts_with(ITEM_NAME)
                && cut >= ITEM_NAME.len()
                && seq.bytes().all(|b| b.is_ascii_digit() || b == b'-') =>
        {
            node[..cut].to_string()
        }
        _ => ITEM_NAME.to_string(),
    }
}

/// Orders item names (sorted by name already, as Curator lists them) the way `kind` hands
/// them out.
pub(super) fn order(kind: QueueKind, items: &mut [String]) {
    match kind {
        QueueKind::Queue | QueueKind::Priority => {}
        QueueKind::Id => items.sort_by_cached_key(|n| without_id(n)),
        QueueKind::Delay => items.sort_by_cached_key(|n| epoch_of(n)),
    }
}

pub(super) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Curator's `DistributedIdQueue.parseId`: the text between the first two separators.
pub(super) fn id_of(node: &str) -> Option<&str> {
    let first = node.find(SEPARATOR)?;
    let second = node[first + 1..].find(SEPARATOR)? + first + 1;
    Some(&node[first + 1..second])
}

/// Curator's `fixId`: `/` and `|` become `_`.
pub(super) fn fix_id(id: &str) -> String {
    id.replace(['/', SEPARATOR], "_")
}

/// The node name with `|id|` left out (the id queue's sort key).
fn without_id(node: &str) -> String {
    match id_of(node) {
        Some(id) => node.replacen(&format!("{SEPARATOR}{id}{SEPARATOR}"), "", 1),
        None => node.to_string(),
    }
}

/// Curator's `DistributedDelayQueue.getEpoch`: the hex between the last two separators, or 0.
pub(super) fn epoch_of(node: &str) -> i64 {
    let Some(last) = node.rfind(SEPARATOR) else {
        return 0;
    };
    let Some(first) = node[..last].rfind(SEPARATOR) else {
        return 0;
    };
    if first == 0 || last <= first + 1 {
        return 0;
    }
    i64::from_str_radix(&node[first + 1..last], 16).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_curators_names() {
        assert_eq!(id_of("queue-|job-7|0000000003"), Some("job-7"));
        assert_eq!(id_of("queue-0000000003"), None);
        assert_eq!(without_id("queue-|b|0000000001"), "queue-0000000001");
        assert_eq!(epoch_of("queue-|18C5F3A2B00|0000000004"), 0x18C5F3A2B00);
        assert_eq!(epoch_of("queue-0000000004"), 0);
        assert_eq!(epoch_of("queue-|zz|0000000004"), 0);
        assert_eq!(requeue_name("queue-0000000003"), "queue-");
        assert_eq!(requeue_name("queue-|job-7|0000000003"), "queue-|job-7|");
        assert_eq!(requeue_name("queue-1000000050000000012"), "queue-100000005");
        assert_eq!(
            requeue_name("queue-|18C5F3A2B00|0000000004"),
            "queue-|18C5F3A2B00|"
        );
        assert_eq!(requeue_name("queue-"), "queue-");
        assert_eq!(ErrorMode::from_name("delete").unwrap(), ErrorMode::Delete);
        assert!(ErrorMode::from_name("retry").is_err());
    }
}
