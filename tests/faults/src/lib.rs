//! The zkrecipes fault suite lives in `tests/faults.rs` of this crate; this library is empty.
//!
//! ```text
//! tests/faults/run            # short configuration (what CI runs), summary table at the end
//! tests/faults/run --long     # thousands of operations per scenario
//! ```
//!
//! See `docs/FAULTS.md` for the scenarios, the invariants checked and the latest figures.
