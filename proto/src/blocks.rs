//! Blocks, DataNodes and where a file's bytes live: the shapes of HDFS's
//! `Block`, `ExtendedBlock`, `DatanodeInfo`, `LocatedBlock(s)`.
//!
//! These travel inside protobuf envelopes (bincode) between clients,
//! metaservers and DataNodes, and [`Block`] is part of the replicated inode
//! record too: change these types only by appending.

use serde::{Deserialize, Serialize};

/// One block of a file: its id, generation stamp and length in bytes.
/// The generation stamp changes whenever a replica's content may have
/// diverged (pipeline recovery, lease recovery, append), so a replica with an
/// older stamp is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Block {
    pub id: u64,
    pub gen_stamp: u64,
    pub num_bytes: u64,
}

impl Block {
    /// HDFS's file name for the block's data (`blk_<id>`).
    pub fn file_name(&self) -> String {
        format!("blk_{}", self.id)
    }
    /// HDFS's file name for the block's checksums (`blk_<id>_<genstamp>.meta`).
    pub fn meta_file_name(&self) -> String {
        format!("blk_{}_{}.meta", self.id, self.gen_stamp)
    }
}

impl std::fmt::Display for Block {
    /// `blk_<id>_<genstamp>`, as HDFS prints blocks in fsck and logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "blk_{}_{}", self.id, self.gen_stamp)
    }
}

/// A block within a block pool (HDFS `ExtendedBlock`): what a DataNode is asked about.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ExtendedBlock {
    pub pool_id: String,
    pub block: Block,
}

/// Administrative state of a DataNode in one block pool (and, aggregated,
/// for the node as a whole).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AdminState {
    Normal,
    DecommissionInProgress,
    Decommissioned,
}

impl AdminState {
    /// The text HDFS's `dfsadmin -report` prints.
    pub fn describe(self) -> &'static str {
        match self {
            AdminState::Normal => "Normal",
            AdminState::DecommissionInProgress => "Decommission in progress",
            AdminState::Decommissioned => "Decommissioned",
        }
    }
}

/// A DataNode as clients and other DataNodes reach it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DatanodeId {
    /// Stable for the life of the node's storage (`current/ID`).
    pub uuid: String,
    /// HOST:PORT of its data transfer service.
    pub addr: String,
    pub hostname: String,
    /// Path of its Unix socket for short-circuit local reads (HDFS
    /// `dfs.domain.socket.path`); empty when it has none.
    pub domain_socket: String,
}

/// What a metaserver knows about a DataNode (HDFS `DatanodeInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatanodeInfo {
    pub id: DatanodeId,
    pub capacity_bytes: u64,
    /// Bytes used by every block pool on the node.
    pub dfs_used_bytes: u64,
    /// Bytes used by this nameservice's block pool.
    pub block_pool_used_bytes: u64,
    pub remaining_bytes: u64,
    /// Transfers (reads and writes) in progress.
    pub xceivers: u32,
    pub failed_volumes: u32,
    /// Milliseconds since the last heartbeat this member received.
    pub last_heartbeat_ago_ms: u64,
    pub live: bool,
    pub admin_state: AdminState,
    /// Blocks of this pool the node holds.
    pub blocks: u64,
    /// HOST:PORT of its HTTP endpoint (WebHDFS's data side); empty when it
    /// serves none.
    pub http_addr: String,
    /// HOST:PORT of its Hadoop DataTransferProtocol endpoint; empty when
    /// it serves none.
    pub hadoop_xfer_addr: String,
    /// One of its storages (`DS-...`), which Hadoop's clients carry with
    /// each location; empty before it reported any.
    pub storage_id: String,
}

/// A block and the DataNodes that hold it (reads) or should receive it (writes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocatedBlock {
    pub block: Block,
    /// Offset of the block's first byte in the file.
    pub offset: u64,
    /// Nearest first for reads; pipeline order for writes.
    pub locations: Vec<DatanodeId>,
    /// Every known replica is corrupt.
    pub corrupt: bool,
    /// What DataNodes ask for before they serve the block (HDFS's block
    /// access token); `None` from a cluster that runs without them
    /// (`--insecure`). Not part of this type's encoding, which the log and
    /// the retry table store: tokens travel beside a call's result (see
    /// [`crate::token::BlockTokenCarrier`]).
    #[serde(skip)]
    pub token: Option<crate::token::BlockToken>,
}

/// The blocks of a file covering a byte range (HDFS `LocatedBlocks`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocatedBlocks {
    pub file_length: u64,
    pub blocks: Vec<LocatedBlock>,
    pub under_construction: bool,
    /// False while the last block is still being written (its length on the
    /// DataNodes may be ahead of `num_bytes`).
    pub last_block_complete: bool,
    pub block_pool_id: String,
}

impl LocatedBlocks {
    /// The block holding byte `pos` of the file, if these locations cover it.
    pub fn block_at(&self, pos: u64) -> Option<&LocatedBlock> {
        self.blocks
            .iter()
            .find(|b| b.offset <= pos && pos < b.offset + b.block.num_bytes)
    }
}

/// State of a replica on a DataNode (HDFS `ReplicaState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReplicaState {
    /// Complete and immutable (until an append reopens it).
    Finalized,
    /// Being written (replica being written, `rbw/`).
    Rbw,
}

/// One replica in a block report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportedReplica {
    pub block: Block,
    pub state: ReplicaState,
}

/// What a DataNode tells a member about its changes since the last report
/// (HDFS `blockReceivedAndDeleted`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncrementalReport {
    /// Finalized replicas that are new (or have a new generation stamp / length).
    pub received: Vec<Block>,
    /// Replicas being written (opened for a pipeline).
    pub receiving: Vec<Block>,
    /// Replicas removed.
    pub deleted: Vec<Block>,
}
