//! openraft glue for one nameservice (DESIGN.md §1, §4).
//!
//! * [`TypeConfig`]: one leader per term (`leader_id_std`), so the term is
//!   the fencing epoch.
//! * [`Command`]: what a log entry carries: the namespace's birth
//!   ([`Command::Format`]) or a batch of client ops stamped with the leader's
//!   clock. Apply never reads a clock: time comes from the entry.
//! * [`LogStore`]: the Raft log and vote in RocksDB, fsynced before openraft
//!   is told an append is durable.
//! * [`NsStateMachine`]: the thin adapter that applies commands through the
//!   namespace engine.
//! * [`network`]: tonic client and server for Raft RPCs.

pub mod log_store;
pub mod network;
pub mod snapshot;
pub mod snapshot_stream;
pub mod state_machine;

use std::fmt;

use serde::{Deserialize, Serialize};

use raftfs_proto::{CallCtx, FsError, Op, OpResult};

pub use log_store::LogStore;
pub use state_machine::NsStateMachine;

use crate::namespace::FormatInfo;

/// A Raft log entry's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// Create the root and the counters; a no-op on a formatted namespace.
    Format(FormatInfo),
    /// Client operations, applied in order; `time_ms` is the leader's clock
    /// when it proposed them (apply keeps log time monotonic).
    Ops { time_ms: i64, ops: Vec<(CallCtx, Op)> },
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Format(i) => write!(f, "format({})", i.nameservice),
            Command::Ops { time_ms, ops } => write!(f, "ops(n={}, t={time_ms})", ops.len()),
        }
    }
}

/// One result per op of a [`Command::Ops`]; one `Ok(Unit)` for a format.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandResponse {
    pub results: Vec<Result<OpResult, FsError>>,
}

openraft::declare_raft_types!(
    /// The openraft type configuration of a nameservice.
    pub TypeConfig:
        D = Command,
        R = CommandResponse,
        NodeId = u64,
        Node = openraft::BasicNode,
        LeaderId = openraft::impls::leader_id_std::LeaderId<u64, u64>,
);

pub type Raft = openraft::Raft<TypeConfig, NsStateMachine>;
pub type LogId = openraft::alias::LogIdOf<TypeConfig>;
pub type Vote = openraft::alias::VoteOf<TypeConfig>;
pub type Entry = openraft::alias::EntryOf<TypeConfig>;
pub type StoredMembership = openraft::alias::StoredMembershipOf<TypeConfig>;
pub type SnapshotMeta = openraft::alias::SnapshotMetaOf<TypeConfig>;
