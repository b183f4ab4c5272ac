//! Wire-level types of raftfs.
//!
//! * [`pb`]: the tonic/prost code generated from `proto/raftfs.proto`.
//! * [`Op`], [`OpResult`], [`FsError`] and the status types: the serde types
//!   that travel inside the protobuf envelopes (bincode-encoded, see [`codec`]).
//!   The same `Op` values are what the Raft log carries, so they are part of
//!   the on-disk format too: change them only by adding variants at the end.
//!
//! Nothing here does I/O; the crate is shared by the metaserver, the SDK and
//! the router so that a typed error raised on a server arrives as the same
//! typed error in the client.

pub mod admin;
pub mod blocks;
pub mod checksum;
pub mod codec;
pub mod datanode;
pub mod error;
pub mod limits;
pub mod ops;
pub mod path_rules;
pub mod token;
pub mod types;

pub use admin::{AdminOp, AdminResult, FsStats, SafeModeAction, SafeModeStatus};
pub use blocks::{
    AdminState, Block, DatanodeId, DatanodeInfo, ExtendedBlock, IncrementalReport, LocatedBlock, LocatedBlocks,
    ReplicaState, ReportedReplica,
};
pub use error::{java_class_of, FsError, LeaderHint};
pub use ops::{CallCtx, Op, OpResult, QuotaSetting};
pub use token::{
    AccessMode, AccessModes, BlockKey, BlockToken, BlockTokenCarrier, BlockTokenIdentifier, BlockTokenProof,
    DataProtection, DelegationKey, DelegationToken, DelegationTokenIdentifier, ExportedBlockKeys,
};
pub use types::{ContentSummary, DirectoryListing, FileStatus, FileType, Permission};

/// Generated gRPC code.
#[allow(clippy::all, missing_docs)]
pub mod pb {
    tonic::include_proto!("raftfs.v1");
}
