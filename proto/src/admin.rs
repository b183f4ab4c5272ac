//! Membership and leadership commands of `raftfs haadmin` (what HDFS does
//! with `haadmin -transitionToActive` and JournalNode edits, done here by
//! Raft). They travel in the `Admin` RPC, never in the log as such: the
//! membership entries they cause are openraft's own.

use serde::{Deserialize, Serialize};

use crate::blocks::{Block, DatanodeId, DatanodeInfo};

/// How long a leadership transfer may take before the caller is told it did not happen.
pub const TRANSFER_LEADER_TIMEOUT_MS: u64 = 5_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AdminOp {
    /// Hand leadership to voter `to`.
    TransferLeader { to: u64 },
    /// Add member `id` at `addr`: joins as a learner, catches up, becomes a voter.
    AddMember { id: u64, addr: String },
    /// Remove member `id` from the voters and from the group.
    RemoveMember { id: u64 },
    // ---- dfsadmin (appended) ----
    /// `dfsadmin -safemode get|enter|leave`.
    SafeMode(SafeModeAction),
    /// `dfsadmin -report`: every DataNode as this nameservice sees it.
    DatanodeReport,
    /// `fsck PATH`: files, blocks, replicas and their health under `path`,
    /// files after `start_after` (a path) in walk order, at most `limit`.
    Fsck {
        path: String,
        start_after: String,
        limit: u32,
    },
    /// `dfsadmin -refreshUserToGroupsMappings`: the member that receives
    /// it (any member, not only the leader) rereads its group mapping file
    /// and forgets the groups it cached.
    RefreshUserToGroupsMappings,
    /// `dfsadmin -listOpenFiles [-path PATH]`: the files open for write
    /// (at `path` or below it), at most [`MAX_OPEN_FILES_LISTED`], read
    /// from the leader's applied state.
    ListOpenFiles { path: String },
    /// Hadoop's `getFsStats` (what `hdfs dfs -df` prints): the live
    /// DataNodes' space and the block manager's counts. Anyone may ask,
    /// as in HDFS.
    FsStats,
}

impl AdminOp {
    /// Whether any user may ask (the rest are the superuser's).
    pub fn is_open_to_all(&self) -> bool {
        matches!(self, AdminOp::FsStats | AdminOp::SafeMode(SafeModeAction::Get))
    }

    /// Whether the op only reports (a router may ask it of nameservices for
    /// its pages and its Hadoop RPC answers).
    pub fn is_report(&self) -> bool {
        matches!(
            self,
            AdminOp::DatanodeReport
                | AdminOp::ListOpenFiles { .. }
                | AdminOp::FsStats
                | AdminOp::SafeMode(SafeModeAction::Get)
        )
    }
}

/// What `getFsStats` answers: the live DataNodes' space, and the block
/// manager's counts (HDFS's `FSNamesystem.getStats`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsStats {
    pub capacity_bytes: u64,
    pub used_bytes: u64,
    pub remaining_bytes: u64,
    /// Complete blocks with fewer good replicas than their replication.
    pub under_replicated_blocks: u64,
    /// Blocks with a corrupt replica.
    pub corrupt_blocks: u64,
    /// Complete blocks with no good replica on a live DataNode.
    pub missing_blocks: u64,
    /// Replicas queued for deletion.
    pub pending_deletion_blocks: u64,
}

/// Most open files one `ListOpenFiles` answers with.
pub const MAX_OPEN_FILES_LISTED: usize = 1000;

/// One file open for write, as `dfsadmin -listOpenFiles` and the status
/// pages show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenFileEntry {
    pub inode: u64,
    /// Its path, or `/.reserved/.inodes/<id>` when the member could not
    /// name it within its search bound.
    pub path: String,
    /// Bytes in its blocks so far.
    pub length: u64,
    /// The lease holder (the writer's client name).
    pub holder: String,
    /// Log time (ms) the holder last renewed its lease.
    pub renewed_ms: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SafeModeAction {
    Get,
    Enter,
    Leave,
}

/// What `dfsadmin -safemode` reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SafeModeStatus {
    pub on: bool,
    /// Entered by an operator (leaves only by `-safemode leave`).
    pub manual: bool,
    pub safe_blocks: u64,
    pub total_blocks: u64,
    /// HDFS's explanation ("The reported blocks 3 has reached the threshold ...").
    pub message: String,
}

/// One replica as fsck shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsckReplica {
    pub node: DatanodeId,
    /// FINALIZED, RBW or CORRUPT.
    pub state: String,
    pub decommission: crate::blocks::AdminState,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsckBlock {
    pub block: Block,
    /// Good replicas on live nodes in normal admin state.
    pub live: u32,
    pub replicas: Vec<FsckReplica>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsckFile {
    pub path: String,
    pub is_dir: bool,
    pub length: u64,
    pub replication: u16,
    pub under_construction: bool,
    pub blocks: Vec<FsckBlock>,
}

/// One page of an fsck walk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsckReport {
    pub block_pool_id: String,
    pub files: Vec<FsckFile>,
    /// More files follow: ask again with `start_after` = the last path.
    pub more: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AdminResult {
    /// Leadership moved to `leader` after `elapsed_ms`.
    LeaderTransferred {
        leader: u64,
        elapsed_ms: u64,
    },
    /// The voters after the change.
    Membership {
        voters: Vec<u64>,
    },
    SafeMode(SafeModeStatus),
    Datanodes(Vec<DatanodeInfo>),
    Fsck(FsckReport),
    /// Member `member` reread its group mapping.
    GroupsRefreshed {
        member: u64,
    },
    /// The files open for write; `more`: some were left out.
    OpenFiles {
        files: Vec<OpenFileEntry>,
        more: bool,
    },
    FsStats(FsStats),
}

/// Check a member address from the network or the command line: `HOST:PORT`.
pub fn check_member_addr(addr: &str) -> Result<(), crate::FsError> {
    let ok = addr.len() <= crate::limits::MAX_MEMBER_ADDR_LEN_BYTES
        && addr
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && !host.contains(['/', ' ']) && port.parse::<u16>().is_ok());
    if ok {
        Ok(())
    } else {
        Err(crate::FsError::InvalidArgument(format!(
            "member address {addr:?} is not HOST:PORT"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_addresses() {
        assert!(check_member_addr("127.0.0.1:8020").is_ok());
        assert!(check_member_addr("nn-1.example.com:1").is_ok());
        for bad in ["", "host", ":80", "h:99999", "h:p", "a b:1", "http://h:1"] {
            assert!(check_member_addr(bad).is_err(), "{bad:?} accepted");
        }
    }
}
