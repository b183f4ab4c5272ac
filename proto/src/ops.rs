//! Namespace operations as they travel from client to leader and, in
//! `--exec apply` mode, through the Raft log.
//!
//! Variants are appended, never reordered: their bincode tags are on disk.

use serde::{Deserialize, Serialize};

use crate::blocks::{Block, LocatedBlock, LocatedBlocks};
use crate::token::{DelegationKey, DelegationToken};
use crate::types::{ContentSummary, DirectoryListing, FileStatus, Permission};

/// Who calls, and the idempotency key of the call (DESIGN.md §5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallCtx {
    pub client_id: String,
    pub call_id: u64,
    pub user: String,
    pub groups: Vec<String>,
    /// The mount-table version a router or the SDK routed the call by (0:
    /// not routed). A write routed by a table is planned only where the
    /// nameservice owns its paths (see the metaserver's
    /// `namespace::ownership`). Not serialized with the context: a log
    /// entry carries it beside it, so that entries written before it
    /// existed still decode.
    #[serde(skip)]
    pub routed_by: u64,
}

/// How `setQuota` changes one of the two quotas (HDFS uses
/// `QUOTA_DONT_SET = Long.MAX_VALUE` and `QUOTA_RESET = -1` for these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum QuotaSetting {
    Keep,
    Clear,
    Set(u64),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// Returns `Bool(true)`.
    Mkdirs {
        path: String,
        permission: Permission,
        create_parent: bool,
    },
    /// Creates a file under construction held by the caller's client id; returns `Status`.
    Create {
        path: String,
        permission: Permission,
        overwrite: bool,
        create_parent: bool,
        replication: u16,
        block_size: u64,
    },
    /// Closes a file the caller holds open. `last` is the last block as the
    /// writer saw it (its final length). Returns `Bool(true)` when the file
    /// is closed, `Bool(false)` when its last block does not have its minimum
    /// replicas reported yet (the client asks again, as HDFS's does).
    Complete {
        path: String,
        last: Option<Block>,
    },
    /// Old `rename`: returns `Bool(false)` instead of most errors.
    Rename {
        src: String,
        dst: String,
    },
    /// `rename2` with the OVERWRITE option or without; returns `Unit`.
    Rename2 {
        src: String,
        dst: String,
        overwrite: bool,
    },
    /// Returns `Bool(false)` for a missing path or the root.
    Delete {
        path: String,
        recursive: bool,
    },
    SetPermission {
        path: String,
        permission: Permission,
    },
    SetOwner {
        path: String,
        owner: Option<String>,
        group: Option<String>,
    },
    /// Returns `Bool(false)` for a directory, as HDFS does.
    SetReplication {
        path: String,
        replication: u16,
    },
    /// Times in ms since the epoch; `None` leaves one unchanged.
    SetTimes {
        path: String,
        mtime: Option<i64>,
        atime: Option<i64>,
    },
    SetQuota {
        path: String,
        namespace: QuotaSetting,
        space: QuotaSetting,
    },
    // ---- reads ----
    /// Returns `Status(None)` for a missing path.
    GetFileInfo {
        path: String,
    },
    GetListing {
        path: String,
        start_after: String,
        limit: u32,
    },
    GetContentSummary {
        path: String,
    },
    // ---- the data path (appended: the tags above are on disk) ----
    /// Allocate the next block of a file the caller is writing; `previous` is
    /// its last block as the writer saw it (the length it reached). Returns
    /// `Located` with the pipeline's DataNodes, chosen by the leader.
    AddBlock {
        path: String,
        previous: Option<Block>,
        /// DataNode uuids the writer could not reach.
        excluded: Vec<String>,
    },
    /// Give up the last block of a file being written (its pipeline never
    /// came up). Returns `Unit`.
    AbandonBlock {
        path: String,
        block: Block,
    },
    /// The blocks covering `[offset, offset + length)` and where they are
    /// (a read). Returns `Blocks`.
    GetBlockLocations {
        path: String,
        offset: u64,
        length: u64,
    },
    /// A pipeline broke: a new generation stamp for the block being written
    /// (HDFS `updateBlockForPipeline`). Returns `Located` with the new stamp.
    /// An empty `path` names the file the block belongs to (Hadoop's call
    /// names only the block); the leader resolves it before it runs the op.
    UpdateBlockForPipeline {
        path: String,
        block: Block,
    },
    /// The rebuilt pipeline is up: the block has `new`'s stamp and length
    /// and lives on `nodes` (DataNode uuids). Returns `Unit`. An empty
    /// `path` names the file `old` belongs to, as for `UpdateBlockForPipeline`.
    UpdatePipeline {
        path: String,
        old: Block,
        new: Block,
        nodes: Vec<String>,
    },
    /// More DataNodes for a pipeline being rebuilt (a read of the namespace:
    /// nothing is logged). Returns `Located` with only the new nodes.
    GetAdditionalDatanode {
        path: String,
        block: Block,
        existing: Vec<String>,
        excluded: Vec<String>,
        count: u32,
    },
    /// The caller (client id) still writes its open files. Returns `Unit`.
    RenewLease,
    /// Close a file whose writer went away: at once if its blocks are
    /// complete, else after block recovery on the DataNodes. Returns
    /// `Bool(true)` once the file is closed.
    RecoverLease {
        path: String,
    },
    /// Open a closed file for appending. Returns `Appended`.
    Append {
        path: String,
    },
    /// A DataNode finished recovering the last block of a file (HDFS
    /// `commitBlockSynchronization`): the block now has `new_gen_stamp`,
    /// `new_length` and lives on `nodes`; the file is closed.
    CommitBlockSynchronization {
        path_inode: u64,
        block: Block,
        new_gen_stamp: u64,
        new_length: u64,
        nodes: Vec<String>,
    },
    /// Start (or, with `decommission: false`, stop) decommissioning the
    /// DataNode named by uuid, HOST:PORT or host name in this nameservice's
    /// block pool (`dfsadmin -decommission`). Superuser only; returns `Unit`.
    SetDatanodeAdmin {
        node: String,
        decommission: bool,
    },
    // ---- delegation tokens (appended: the tags above are on disk) ----
    /// Issue a delegation token for the caller, renewable by `renewer`
    /// (HDFS `getDelegationToken`). Returns `DelegationToken`. Only a caller
    /// authenticated by a certificate may ask. The lifetimes are the
    /// member's (`--delegation-token-*`): whatever a client sends is replaced.
    GetDelegationToken {
        renewer: String,
        max_lifetime_ms: u64,
        renew_interval_ms: u64,
    },
    /// Push a token's expiry to `renew_interval_ms` from now (never past its
    /// max date); only its renewer may. Returns `Expiry` (Unix ms).
    RenewDelegationToken {
        token: DelegationToken,
        renew_interval_ms: u64,
    },
    /// Revoke a token; its owner or renewer may. Returns `Unit`.
    CancelDelegationToken {
        token: DelegationToken,
    },
    /// A member's own: add a master key (made by the leader from the OS's
    /// random source) to sign new tokens with. Returns `Unit`.
    AddDelegationKey {
        key: DelegationKey,
    },
    /// A member's own: drop tokens `sequence_numbers` whose expiry has
    /// passed (by the entry's log time), and every expired master key. Returns `Unit`.
    ExpireDelegationTokens {
        sequence_numbers: Vec<u64>,
    },
    // ---- federation (appended: the tags above are on disk) ----
    /// The paths this nameservice owns in the federation: the mount
    /// table's destinations that lead into it, at table `version` (set by
    /// the routers; superuser only). A routed call for another path is
    /// refused with `NotOwned`. Returns `Unit`.
    SetOwnership {
        version: u64,
        prefixes: Vec<String>,
    },
    // ---- appended: the tags above are on disk ----
    /// Move the blocks of `sources`, in order, to the end of `target` and
    /// delete the sources (HDFS `concat`). Every file is closed and in
    /// the target's directory; at most
    /// [`MAX_CONCAT_SOURCES`](crate::limits::MAX_CONCAT_SOURCES). Returns `Unit`.
    Concat {
        target: String,
        sources: Vec<String>,
    },
    /// Cut a closed file to `new_length` bytes (HDFS `truncate`). Returns
    /// `Bool(true)` when done at once (at a block boundary), `Bool(false)`
    /// when the last block's replicas are being cut (the file stays open
    /// until that recovery closes it).
    Truncate {
        path: String,
        new_length: u64,
    },
}

impl Op {
    /// True for operations that change the namespace and so go through Raft.
    pub fn is_write(&self) -> bool {
        !matches!(
            self,
            Op::GetFileInfo { .. }
                | Op::GetListing { .. }
                | Op::GetContentSummary { .. }
                | Op::GetBlockLocations { .. }
                | Op::GetAdditionalDatanode { .. }
        )
    }

    /// The path the operation is about (the source of a rename), as HDFS's
    /// audit log names it.
    pub fn src_path(&self) -> &str {
        match self {
            Op::Mkdirs { path, .. }
            | Op::Create { path, .. }
            | Op::Complete { path, .. }
            | Op::Delete { path, .. }
            | Op::SetPermission { path, .. }
            | Op::SetOwner { path, .. }
            | Op::SetReplication { path, .. }
            | Op::SetTimes { path, .. }
            | Op::SetQuota { path, .. }
            | Op::GetFileInfo { path }
            | Op::GetListing { path, .. }
            | Op::GetContentSummary { path }
            | Op::AddBlock { path, .. }
            | Op::AbandonBlock { path, .. }
            | Op::GetBlockLocations { path, .. }
            | Op::UpdateBlockForPipeline { path, .. }
            | Op::UpdatePipeline { path, .. }
            | Op::GetAdditionalDatanode { path, .. }
            | Op::RecoverLease { path }
            | Op::Append { path }
            | Op::Truncate { path, .. } => path,
            Op::Rename { src, .. } | Op::Rename2 { src, .. } => src,
            Op::Concat { target, .. } => target,
            Op::RenewLease
            | Op::CommitBlockSynchronization { .. }
            | Op::GetDelegationToken { .. }
            | Op::RenewDelegationToken { .. }
            | Op::CancelDelegationToken { .. }
            | Op::AddDelegationKey { .. }
            | Op::ExpireDelegationTokens { .. }
            | Op::SetOwnership { .. } => "",
            Op::SetDatanodeAdmin { node, .. } => node,
        }
    }

    /// The HDFS name of the operation, for logs and audit lines.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Mkdirs { .. } => "mkdirs",
            Op::Create { .. } => "create",
            Op::Complete { .. } => "complete",
            Op::Rename { .. } => "rename",
            Op::Rename2 { .. } => "rename2",
            Op::Delete { .. } => "delete",
            Op::SetPermission { .. } => "setPermission",
            Op::SetOwner { .. } => "setOwner",
            Op::SetReplication { .. } => "setReplication",
            Op::SetTimes { .. } => "setTimes",
            Op::SetQuota { .. } => "setQuota",
            Op::GetFileInfo { .. } => "getfileinfo",
            Op::GetListing { .. } => "listStatus",
            Op::GetContentSummary { .. } => "contentSummary",
            Op::AddBlock { .. } => "addBlock",
            Op::AbandonBlock { .. } => "abandonBlock",
            Op::GetBlockLocations { .. } => "open",
            Op::UpdateBlockForPipeline { .. } => "updateBlockForPipeline",
            Op::UpdatePipeline { .. } => "updatePipeline",
            Op::GetAdditionalDatanode { .. } => "getAdditionalDatanode",
            Op::RenewLease => "renewLease",
            Op::RecoverLease { .. } => "recoverLease",
            Op::Append { .. } => "append",
            Op::CommitBlockSynchronization { .. } => "commitBlockSynchronization",
            Op::SetDatanodeAdmin { .. } => "setDatanodeAdmin",
            Op::GetDelegationToken { .. } => "getDelegationToken",
            Op::RenewDelegationToken { .. } => "renewDelegationToken",
            Op::CancelDelegationToken { .. } => "cancelDelegationToken",
            Op::AddDelegationKey { .. } => "addDelegationKey",
            Op::ExpireDelegationTokens { .. } => "expireDelegationTokens",
            Op::SetOwnership { .. } => "setOwnership",
            Op::Concat { .. } => "concat",
            Op::Truncate { .. } => "truncate",
        }
    }
}

impl OpResult {
    /// The blocks this result names (block access tokens go on them).
    pub fn located_blocks_mut(&mut self) -> Vec<&mut LocatedBlock> {
        match self {
            OpResult::Located(lb) => vec![lb],
            OpResult::Blocks(lbs) => lbs.blocks.iter_mut().collect(),
            OpResult::Appended { last: Some(lb), .. } => vec![lb],
            _ => Vec::new(),
        }
    }

    /// [`OpResult::located_blocks_mut`], read-only.
    pub fn located_blocks(&self) -> Vec<&LocatedBlock> {
        match self {
            OpResult::Located(lb) => vec![lb],
            OpResult::Blocks(lbs) => lbs.blocks.iter().collect(),
            OpResult::Appended { last: Some(lb), .. } => vec![lb],
            _ => Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum OpResult {
    Unit,
    Bool(bool),
    Status(Option<FileStatus>),
    Listing(DirectoryListing),
    Summary(ContentSummary),
    Located(LocatedBlock),
    Blocks(LocatedBlocks),
    /// The file opened for append, and its last block if it is partial (the
    /// writer reopens that block's pipeline); `None` starts a new block.
    Appended {
        status: FileStatus,
        last: Option<LocatedBlock>,
    },
    /// recoverLease started a block recovery (what the log records; the
    /// member starts the recovery on the DataNodes and answers the client
    /// `Bool(false)`: not closed yet).
    RecoveryStarted {
        inode: u64,
        block: Block,
        recovery_id: u64,
    },
    DelegationToken(DelegationToken),
    /// A renewed delegation token's new expiry, Unix ms.
    Expiry(i64),
    /// truncate (or a recoverLease of a file being truncated) started a
    /// recovery that cuts every replica of `block` to `block.num_bytes`
    /// (the member starts it and answers the client `Bool(false)`).
    TruncateStarted {
        inode: u64,
        block: Block,
        recovery_id: u64,
    },
}
