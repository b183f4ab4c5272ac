//! The block manager: soft state of one nameservice member about its block
//! pool (DESIGN.md §6, HDFS `BlockManager` + `DatanodeManager`).
//!
//! What it knows and where from:
//! * which blocks exist, their stamps, lengths and files' replication: the
//!   replicated block table, loaded at start and followed on every apply
//!   ([`BlockManager::apply_changes`]);
//! * which DataNodes exist and how full they are: registrations and
//!   heartbeats, which every DataNode sends to every member;
//! * where replicas are: full and incremental block reports, also sent to
//!   every member, so a follower that becomes leader knows as much as the
//!   old leader did.
//!
//! What it decides: pipeline targets (placement), the order of replicas for
//! readers, whether a block has its minimum replicas, safe mode, and, on the
//! leader only, the commands for DataNodes (re-replicate, delete, recover)
//! that the replication monitor ([`monitor`]) schedules and heartbeat
//! replies carry.
//!
//! Its lock is its own, separate from the namespace (the first step of the
//! Bilibili lock split): reports never wait for namespace operations, and a
//! full report is processed in chunks so block lookups in between do not
//! wait for a whole report. Nothing here is replicated: a restart rebuilds
//! it from the block table and the DataNodes' reports. Time is the member's
//! monotonic clock, passed in, so the logic is testable without sleeping.

mod manager;
pub mod monitor;
mod placement;
mod replica_map;
mod safemode;

pub use manager::{BlockGauges, BlockManager};
pub use replica_map::{BlockStatus, ReplicaView};
pub use safemode::SafeModeStatus;

/// Tunables of the block manager, passed explicitly.
#[derive(Debug, Clone)]
pub struct BlockManagerConfig {
    /// A DataNode silent this long is dead (HDFS: 2 × recheck + 10 × heartbeat = 10.5 min).
    pub dead_after_ms: u64,
    /// How often the replication monitor runs (HDFS `dfs.namenode.replication.interval`, 3 s).
    pub monitor_interval_ms: u64,
    /// A scheduled re-replication not reported done after this long is scheduled again.
    pub pending_replication_timeout_ms: u64,
    /// Leave safe mode once this share of complete blocks has a replica (HDFS 0.999).
    pub safemode_threshold: f64,
    /// ... and this long after reaching it (HDFS `dfs.namenode.safemode.extension`).
    pub safemode_extension_ms: u64,
    /// Block access token lifetime and key update interval (HDFS
    /// `dfs.block.access.token.lifetime`, `dfs.block.access.key.update.interval`).
    pub block_tokens: raftfs_trust::BlockTokenTimes,
    /// How clients reach DataNodes, signed into every block token (HDFS
    /// `dfs.data.transfer.protection`; default `authentication`).
    pub data_protection: raftfs_proto::DataProtection,
}

impl Default for BlockManagerConfig {
    fn default() -> Self {
        BlockManagerConfig {
            dead_after_ms: 630_000,
            monitor_interval_ms: 3_000,
            pending_replication_timeout_ms: 300_000,
            safemode_threshold: 0.999,
            safemode_extension_ms: 5_000,
            block_tokens: raftfs_trust::BlockTokenTimes::default(),
            data_protection: raftfs_proto::DataProtection::default(),
        }
    }
}

/// A block is safe once it has this many replicas (HDFS `dfs.namenode.replication.min`).
pub const MIN_REPLICATION: usize = 1;
/// Most replica deletions sent in one heartbeat reply (HDFS `dfs.block.invalidate.limit`).
pub const MAX_INVALIDATES_PER_HEARTBEAT: usize = 1000;
/// Most re-replications one DataNode is asked to run at once (HDFS `dfs.namenode.replication.max-streams`).
pub const MAX_TRANSFERS_PER_NODE: usize = 4;
/// Most blocks the replication monitor looks at per run.
pub const MAX_BLOCKS_PER_MONITOR_RUN: usize = 100_000;
/// Replicas of a full report processed per hold of the lock.
pub const REPORT_CHUNK_REPLICAS: usize = 65_536;
/// Most DataNodes one member tracks.
pub const MAX_DATANODES: usize = 100_000;
