//! Messages between DataNodes and metaservers (HDFS `DatanodeProtocol`) and
//! between clients and DataNodes (HDFS `DataTransferProtocol`), carried as
//! bincode inside the protobuf envelopes of `raftfs.proto`.
//!
//! Fencing (DESIGN.md §6): every heartbeat reply carries the member's Raft
//! term and whether it leads; a DataNode obeys commands only from a leader
//! whose term is the highest it has seen for that block pool, so a deposed
//! leader's commands are ignored.

use serde::{Deserialize, Serialize};

use crate::blocks::{Block, DatanodeId, IncrementalReport, ReplicaState, ReportedReplica};
use crate::token::{BlockToken, BlockTokenProof, ExportedBlockKeys};
use crate::FsError;

/// Bytes covered by one checksum (HDFS `dfs.bytes-per-checksum`).
pub const BYTES_PER_CHECKSUM: usize = crate::limits::BYTES_PER_CHECKSUM as usize;
/// Bytes of one stored checksum (CRC32C, big-endian).
pub const CHECKSUM_SIZE_BYTES: usize = 4;
/// Most data bytes in one write packet or read chunk (HDFS `dfs.client-write-packet-size` is 64 KiB).
pub const MAX_PACKET_DATA_BYTES: usize = 1024 * 1024;
/// Replicas per page of a full block report.
pub const MAX_REPORT_REPLICAS_PER_PAGE: usize = 500_000;
/// Most blocks named by one command or incremental report.
pub const MAX_BLOCKS_PER_COMMAND: usize = 10_000;

/// Ack status: the DataNode wrote the packet.
pub const ACK_SUCCESS: u32 = 0;
/// Ack status: the DataNode failed (I/O, or its downstream is gone).
pub const ACK_ERROR: u32 = 1;
/// Ack status: the packet's data does not match its checksums.
pub const ACK_CHECKSUM_ERROR: u32 = 2;
/// The seqno of the ack that answers a pipeline's header (setup).
pub const SETUP_SEQNO: u64 = u64::MAX;

/// A member's answer to a DataNode's version request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceInfo {
    pub cluster_id: String,
    pub namespace_id: u64,
    pub block_pool_id: String,
    pub nameservice: String,
    pub member_id: u64,
    pub layout_version: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionRequest {
    /// The DataNode's cluster, if it already belongs to one.
    pub cluster_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    pub id: DatanodeId,
    pub cluster_id: String,
    pub block_pool_id: String,
    /// One per data directory (`DS-<uuid>`).
    pub storage_ids: Vec<String>,
    /// HOST:PORT of its HTTP endpoint, which serves WebHDFS's data side
    /// (HDFS's `infoPort`); empty when it serves none.
    pub http_addr: String,
    /// HOST:PORT of its Hadoop DataTransferProtocol service; empty when it
    /// serves none.
    pub hadoop_xfer_addr: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    pub uuid: String,
    pub block_pool_id: String,
    pub capacity_bytes: u64,
    pub dfs_used_bytes: u64,
    pub block_pool_used_bytes: u64,
    pub remaining_bytes: u64,
    pub xceivers: u32,
    pub failed_volumes: u32,
}

/// What a leader asks a DataNode to do (HDFS `DatanodeCommand`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DatanodeCommand {
    /// Delete these replicas (HDFS DNA_INVALIDATE).
    Invalidate { blocks: Vec<Block> },
    /// Copy a replica to `targets` (HDFS DNA_TRANSFER).
    Transfer { block: Block, targets: Vec<DatanodeId> },
    /// Be the primary of a block recovery (HDFS DNA_RECOVERBLOCK): agree a
    /// length with `replicas`, stamp them `new_gen_stamp`, then report it
    /// with commitBlockSynchronization for file `inode`.
    Recover {
        inode: u64,
        block: Block,
        new_gen_stamp: u64,
        replicas: Vec<DatanodeId>,
        /// A truncate's recovery: cut every replica to `block.num_bytes`
        /// instead of agreeing on a length.
        truncate: bool,
    },
    /// The member does not know this node: register again, then send a full report.
    Reregister,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatReply {
    /// The member's Raft term (the fencing epoch).
    pub term: u64,
    pub is_leader: bool,
    /// Only a leader sends commands.
    pub commands: Vec<DatanodeCommand>,
    /// The member's block keys (every member has its own); `None` when it
    /// mints no block tokens (`--insecure`).
    pub block_keys: Option<ExportedBlockKeys>,
}

/// A member's answer to a registration: its block keys, so the DataNode
/// can check the member's tokens from its first call on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistrationReply {
    pub block_keys: Option<ExportedBlockKeys>,
}

/// One page of a full block report; a report's pages share `report_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FullReport {
    pub uuid: String,
    pub block_pool_id: String,
    pub report_id: u64,
    pub page: u32,
    pub last_page: bool,
    pub replicas: Vec<ReportedReplica>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncrementalReportMsg {
    pub uuid: String,
    pub block_pool_id: String,
    pub report: IncrementalReport,
}

/// Replicas found corrupt (by a reader's checksum check or the DataNode itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BadBlocks {
    pub block_pool_id: String,
    /// (block, uuid of the DataNode holding the bad replica)
    pub replicas: Vec<(Block, String)>,
}

/// The primary DataNode's report at the end of a block recovery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitBlockSync {
    pub block_pool_id: String,
    pub inode: u64,
    pub block: Block,
    pub new_gen_stamp: u64,
    pub new_length: u64,
    /// DataNodes (uuids) that hold the recovered replica.
    pub nodes: Vec<String>,
}

/// A request about one block that shows a credential for it.
pub trait BlockRequest {
    fn block_pool_id(&self) -> &str;
    fn block_id(&self) -> u64;
    /// The token itself (in TLS).
    fn token(&self) -> Option<&BlockToken>;
    /// A proof of a token (over plaintext).
    fn proof(&self) -> Option<&BlockTokenProof>;
}

macro_rules! block_request {
    ($($t:ty),*) => {$(
        impl BlockRequest for $t {
            fn block_pool_id(&self) -> &str {
                &self.block_pool_id
            }
            fn block_id(&self) -> u64 {
                self.block.id
            }
            fn token(&self) -> Option<&BlockToken> {
                self.token.as_ref()
            }
            fn proof(&self) -> Option<&BlockTokenProof> {
                self.proof.as_ref()
            }
        }
    )*};
}

block_request!(WriteHeader, ReadHeader, ReplicaQuery, TransferRequest);

/// The first message of a WriteBlock stream (HDFS `OpWriteBlockProto`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteHeader {
    pub block_pool_id: String,
    /// The block as it will be when the write succeeds (id, generation stamp);
    /// `num_bytes` is where the data starts (non-zero when a pipeline is
    /// rebuilt or a replica is appended to).
    pub block: Block,
    /// DataNodes after this one.
    pub downstream: Vec<DatanodeId>,
    pub stage: WriteStage,
    /// For logs: who writes.
    pub client: String,
    /// WRITE access to the block (passed down the pipeline unchanged).
    pub token: Option<BlockToken>,
    /// Instead of `token`, over plaintext (data protection `authentication`).
    pub proof: Option<BlockTokenProof>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WriteStage {
    /// A new replica.
    Create,
    /// Reopen the replica (finalized or being written, with the stamp before
    /// `block.gen_stamp`), truncate it to `block.num_bytes`, restamp it, and go on writing.
    Recover,
    /// A copy made by a transfer (re-replication): a new replica written
    /// whole and finalized at the end.
    Transfer,
    /// A copy of a replica being written, made for a pipeline being rebuilt:
    /// written whole and left being written, so the pipeline reopens it.
    TransferRbw,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadHeader {
    pub block_pool_id: String,
    pub block: Block,
    pub offset: u64,
    pub length: u64,
    pub client: String,
    /// READ access to the block.
    pub token: Option<BlockToken>,
    /// Instead of `token`, over plaintext (data protection `authentication`).
    pub proof: Option<BlockTokenProof>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaQuery {
    pub block_pool_id: String,
    pub block: Block,
    /// READ access to the block.
    pub token: Option<BlockToken>,
    /// Instead of `token`, over plaintext (data protection `authentication`).
    pub proof: Option<BlockTokenProof>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaReport {
    pub block: Block,
    pub state: ReplicaState,
    /// Bytes acknowledged to the writer (readers may read this far).
    pub visible_length: u64,
}

/// `BlockChecksum`'s answer: MD5 over the stored CRCs of the first `length`
/// bytes (HDFS's MD5-of-CRC32C block checksum).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockChecksumReply {
    pub bytes_per_crc: u32,
    pub crc_per_block: u64,
    pub md5: [u8; 16],
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferRequest {
    pub block_pool_id: String,
    /// The replica to copy, up to `num_bytes`.
    pub block: Block,
    pub targets: Vec<DatanodeId>,
    /// `Transfer` (re-replication: finalize at the end) or `TransferRbw`
    /// (pipeline recovery: the copy stays being written for the client).
    pub stage: WriteStage,
    /// COPY access to the block (a client's request; a member's transfer
    /// command needs none, it arrives on the DataNode's own heartbeat).
    pub token: Option<BlockToken>,
    /// Instead of `token`, over plaintext (data protection `authentication`).
    pub proof: Option<BlockTokenProof>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitRecovery {
    pub block_pool_id: String,
    pub block: Block,
    pub recovery_id: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateRecovery {
    pub block_pool_id: String,
    pub block: Block,
    pub recovery_id: u64,
    pub new_length: u64,
}

/// A short-circuit read request (HDFS `requestShortCircuitFds`): on the
/// DataNode's Unix socket, a u32 big-endian length then this, bincode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShortCircuitRequest {
    pub block_pool_id: String,
    pub block: Block,
    pub client: String,
    /// READ access to the block.
    pub token: Option<BlockToken>,
}

/// The answer, framed the same way; with `Ok`, the open data and meta files
/// of the replica travel with it as two file descriptors (SCM_RIGHTS).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShortCircuitReply {
    /// The answering DataNode, so a client can tell it reached the node it meant.
    pub uuid: String,
    /// The replica (finalized), its stamp and length.
    pub block: Block,
}

/// Largest framed short-circuit message, bytes.
pub const MAX_SHORT_CIRCUIT_MESSAGE_BYTES: usize = 64 * 1024;

/// Encode `e` into a gRPC status whose details carry the typed error.
pub fn to_status(e: &FsError) -> tonic::Status {
    let code = match e {
        FsError::InvalidArgument(_) => tonic::Code::InvalidArgument,
        FsError::Unavailable(_) => tonic::Code::Unavailable,
        FsError::FileNotFound(_) | FsError::BlockMissing(_) => tonic::Code::NotFound,
        FsError::InvalidToken(_) => tonic::Code::PermissionDenied,
        _ => tonic::Code::FailedPrecondition,
    };
    let details = crate::codec::encode(e).unwrap_or_default();
    tonic::Status::with_details(code, e.to_string(), details.into())
}

/// The typed error inside a status made by [`to_status`]; a transport
/// failure becomes `Unavailable`.
pub fn from_status(s: &tonic::Status) -> FsError {
    if let Ok(e) = crate::codec::decode::<FsError>(s.details(), "error") {
        return e;
    }
    match s.code() {
        tonic::Code::DeadlineExceeded => FsError::Timeout(s.message().to_string()),
        tonic::Code::InvalidArgument => FsError::InvalidArgument(s.message().to_string()),
        tonic::Code::PermissionDenied | tonic::Code::Unauthenticated => FsError::AccessControl(s.message().to_string()),
        _ => FsError::Unavailable(format!("{}: {}", s.code(), s.message())),
    }
}
