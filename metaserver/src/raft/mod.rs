//! openraft glue for one nameservice (DESIGN.md §1, §4).
//!
//! * [`TypeConfig`]: one leader per term (`leader_id_std`), so the term is
//!   the fencing epoch.
//! * [`Command`]: what a log entry carries, defined by the namespace
//!   (the namespace's birth, client ops, or writes the leader planned).
//!   Apply never reads a clock: time comes from the entry.
//! * [`LogStore`]: the Raft log and vote in RocksDB, fsynced before openraft
//!   is told an append is durable (the generic store of `raftfs_raft`,
//!   shared with the routers' mount-table group).
//! * [`NsStateMachine`]: the thin adapter that hands committed commands to
//!   the namespace's `Applier` and commits what it staged.
//! * [`Snapshots`]: the member's snapshot directories; the network
//!   ([`network`], [`RaftService`]) and the group's lifecycle are the
//!   generic glue of `raftfs_raft`, used here with [`TypeConfig`].

pub mod state_machine;

pub use raftfs_raft::{network, snapshot_stream};

use serde::{Deserialize, Serialize};

use raftfs_proto::{FsError, OpResult};

pub use raftfs_raft::IoStats;

/// The nameservice's Raft log: the generic RocksDB log store.
pub type LogStore = raftfs_raft::LogStore<TypeConfig>;
pub use state_machine::NsStateMachine;

/// A log entry's payload: the namespace's (see [`crate::namespace::command`]).
pub use crate::namespace::Command;

/// One result per write of the entry's [`Command`]; one `Ok(Unit)` for a format.
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
/// The member's snapshots of its namespace.
pub type Snapshots = raftfs_raft::Snapshots<TypeConfig>;
pub type SnapshotDir = raftfs_raft::SnapshotDir<TypeConfig>;
/// The `Raft` gRPC service of a member (peers must be members).
pub type RaftService = raftfs_raft::RaftService<TypeConfig, NsStateMachine>;
/// The Raft network of a member.
pub type NetworkFactory = raftfs_raft::NetworkFactory<TypeConfig>;
pub type LogId = openraft::alias::LogIdOf<TypeConfig>;
pub type Vote = openraft::alias::VoteOf<TypeConfig>;
pub type Entry = openraft::alias::EntryOf<TypeConfig>;
pub type StoredMembership = openraft::alias::StoredMembershipOf<TypeConfig>;
pub type SnapshotMeta = openraft::alias::SnapshotMetaOf<TypeConfig>;
