//! The routers' Raft group, which replicates the [`Federation`](crate::federation::Federation) (the
//! nameservices and the mount table) through the generic glue of
//! `raftfs_raft`: the same log store, network, snapshots and lifecycle as
//! a nameservice, with its own type configuration and state machine.
//!
//! * [`MountTableConfig`]: one leader per term, as a nameservice.
//! * [`FederationCommand`]: a log entry's payload, one change and who asked.
//! * [`MountTableStateMachine`]: applies commands to the federation (and
//!   token commands to the routers' token table) in log order; its
//!   snapshot is one checksummed file.

pub mod state_machine;

use serde::{Deserialize, Serialize};

use raftfs_federation::router_tokens::TokenAnswer;
use raftfs_proto::FsError;

use crate::error::MountTableError;
use crate::federation::FederationChange;

pub use state_machine::{FederationView, MountTableStateMachine};

/// One change to the federation, as the log carries it. Who asked is
/// recorded for the audit trail; the superuser check is made before the
/// change is proposed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FederationCommand {
    pub change: FederationChange,
    pub by: String,
}

impl std::fmt::Display for FederationCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} by {}", self.change, self.by)
    }
}

/// The federation's version after the change, or why it was refused (the
/// same answer on every router: apply is deterministic).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FederationResponse {
    pub result: Option<Result<u64, MountTableError>>,
    /// The answer to a delegation token command (then `result` is `None`).
    pub tokens: Option<Result<TokenAnswer, FsError>>,
}

openraft::declare_raft_types!(
    /// The openraft type configuration of the routers' mount-table group.
    pub MountTableConfig:
        D = FederationCommand,
        R = FederationResponse,
        NodeId = u64,
        Node = openraft::BasicNode,
        LeaderId = openraft::impls::leader_id_std::LeaderId<u64, u64>,
);

pub type MountTableRaft = openraft::Raft<MountTableConfig, MountTableStateMachine>;
pub type LogStore = raftfs_raft::LogStore<MountTableConfig>;
pub type Snapshots = raftfs_raft::Snapshots<MountTableConfig>;
pub type SnapshotDir = raftfs_raft::SnapshotDir<MountTableConfig>;
pub type LogId = openraft::alias::LogIdOf<MountTableConfig>;
pub type StoredMembership = openraft::alias::StoredMembershipOf<MountTableConfig>;
pub type SnapshotMeta = openraft::alias::SnapshotMetaOf<MountTableConfig>;
