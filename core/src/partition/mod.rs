//! kazoo's partitioning and lease recipes, on kazoo's node layout (issue 32): [`SetPartitioner`]
//! (members of a party divide a set of partitions among themselves) and [`NonBlockingLease`] /
//! [`MultiNonBlockingLease`] (a lease held until a wall-clock end). Curator has neither; these
//! follow `kazoo/recipe/partitioner.py` and `kazoo/recipe/lease.py` (kazoo 2.x), so that kazoo
//! processes and every face of zkrecipes share one path.
//!
//! Wire layout (docs/PARTITIONER.md has the whole of it):
//!
//! * **SetPartitioner at `P`**: the party is `P/party`, one EPHEMERAL node per member named
//!   `<32 hex digits>-<identifier>` holding the identifier (kazoo's ShallowParty); a member's
//!   identifier is the text after the first `-`. Partition `x` is locked with kazoo's Lock at
//!   `P/locks/x`: EPHEMERAL_SEQUENTIAL nodes whose names end in `__lock__<10 digits>`, the lowest
//!   sequence holding. Our lock nodes are protected (`_c_<uuid>-__lock__<seq>`), which kazoo's
//!   contender pattern (`__lock__(-?\d{10})$`) matches, so both kinds queue in one line.
//!   `P`, `P/locks`, `P/party` and each `P/locks/x` are PERSISTENT (kazoo's `ensure_path`).
//! * **Assignment** ([`partition_set`]): the members' identifiers sorted, the partitions sorted
//!   (both by code point, as Python sorts `str`), and member `i` of `n` takes partitions
//!   `i, i + n, i + 2n, …` — kazoo's default `partition_func`, exactly.
//! * **NonBlockingLease at `L`**: kazoo's Lock directly under `L` (data: the identifier), and
//!   the PERSISTENT node `L/lease_holder` holding `{"version": 1, "holder": ID, "end":
//!   "YYYY-MM-DDTHH:MM:SS"}` (UTC, whole seconds, Python's `json.dumps` spelling, byte for
//!   byte). `MultiNonBlockingLease(count, L)` tries `L/0`, `L/1`, … `L/count-1` in order.

mod assign;
mod kazoo_lock;
mod lease;
mod partitioner;

pub use self::assign::partition_set;
pub use self::lease::{LeaseOptions, MultiNonBlockingLease, NonBlockingLease};
pub use self::partitioner::{PartitionFunc, PartitionState, PartitionerOptions, SetPartitioner};

/// This host's name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`, else `localhost`): the
/// base of the default identifiers, as kazoo's `socket.gethostname()`.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "localhost".to_string())
}
