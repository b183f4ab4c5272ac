//! What one log entry of a nameservice carries ([`Command`]), in either
//! execution mode (DESIGN.md §4):
//!
//! ```text
//!   --exec apply                         --exec leader
//!   client op ──► Command::RoutedOps     client op ──► lock, plan on the leader
//!                 (the op itself)                      └─► Command::Deltas
//!                        │                                 (mutations + result)
//!                        ▼                                        │
//!        every replica: apply::Applier::apply  ◄──────────────────┘
//!          Ops:    plan + stage each op          Deltas: stage each delta,
//!                  (execute_write)                       guards checked
//! ```
//!
//! The types are the namespace's, not the Raft glue's: the glue carries a
//! `Command` as an opaque payload and hands it back to
//! [`Applier`](super::apply::Applier).

use std::fmt;

use serde::{Deserialize, Serialize};

use raftfs_proto::{CallCtx, Op, OpResult};

use super::{FormatInfo, Mutation};
use crate::store::RetryKey;

/// A log entry's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// Create the root and the counters; a no-op on a formatted namespace.
    Format(FormatInfo),
    /// Client operations (`--exec apply`), planned and applied in order on
    /// every replica; `time_ms` is the leader's clock when it proposed them
    /// (apply keeps log time monotonic).
    Ops { time_ms: i64, ops: Vec<(CallCtx, Op)> },
    /// Writes the leader planned (`--exec leader`): every replica only
    /// stages their mutations, with the guards that make a stale one fail
    /// alike everywhere. `time_ms` is the leader's clock when it proposed
    /// them, as for [`Command::Ops`].
    Deltas { time_ms: i64, writes: Vec<PlannedWrite> },
    /// [`Command::Ops`] with the mount-table version each call was routed
    /// by beside its context (0: not routed; the context does not
    /// serialize it). What `--exec apply` writes since nameservices own
    /// their paths; appended, so that older `Ops` entries still decode.
    RoutedOps { time_ms: i64, ops: Vec<(CallCtx, u64, Op)> },
}

/// One write planned on the leader: what apply writes and what the caller
/// is answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedWrite {
    /// (client id, call id) when the result is kept in the retry table
    /// (see [`is_cached_in_retry_table`](super::is_cached_in_retry_table)).
    /// Apply answers a write whose key is already there from the table and
    /// writes nothing, so a call planned twice (a retry racing its first
    /// attempt, or planned again by a new leader) is applied once.
    pub retry: Option<RetryKey>,
    pub mutations: Vec<Mutation>,
    pub result: OpResult,
}

impl Command {
    /// Client writes the entry carries (1 for a format), to size apply batches.
    pub fn write_count(&self) -> usize {
        match self {
            Command::Format(_) => 1,
            Command::Ops { ops, .. } => ops.len().max(1),
            Command::Deltas { writes, .. } => writes.len().max(1),
            Command::RoutedOps { ops, .. } => ops.len().max(1),
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Format(i) => write!(f, "format({})", i.nameservice),
            Command::Ops { time_ms, ops } => write!(f, "ops(n={}, t={time_ms})", ops.len()),
            Command::Deltas { time_ms, writes } => write!(f, "deltas(n={}, t={time_ms})", writes.len()),
            Command::RoutedOps { time_ms, ops } => write!(f, "ops(n={}, t={time_ms})", ops.len()),
        }
    }
}
