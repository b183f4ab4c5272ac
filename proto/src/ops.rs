//! Namespace operations as they travel from client to leader and, in
//! `--exec apply` mode, through the Raft log.
//!
//! Variants are appended, never reordered: their bincode tags are on disk.

use serde::{Deserialize, Serialize};

use crate::types::{ContentSummary, DirectoryListing, FileStatus, Permission};

/// Who calls, and the idempotency key of the call (DESIGN.md §5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallCtx {
    pub client_id: String,
    pub call_id: u64,
    pub user: String,
    pub groups: Vec<String>,
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
    /// Closes a file the caller holds open; returns `Bool(true)`.
    Complete {
        path: String,
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
}

impl Op {
    /// True for operations that change the namespace and so go through Raft.
    pub fn is_write(&self) -> bool {
        !matches!(
            self,
            Op::GetFileInfo { .. } | Op::GetListing { .. } | Op::GetContentSummary { .. }
        )
    }

    /// The path the operation is about (the source of a rename), as HDFS's
    /// audit log names it.
    pub fn src_path(&self) -> &str {
        match self {
            Op::Mkdirs { path, .. }
            | Op::Create { path, .. }
            | Op::Complete { path }
            | Op::Delete { path, .. }
            | Op::SetPermission { path, .. }
            | Op::SetOwner { path, .. }
            | Op::SetReplication { path, .. }
            | Op::SetTimes { path, .. }
            | Op::SetQuota { path, .. }
            | Op::GetFileInfo { path }
            | Op::GetListing { path, .. }
            | Op::GetContentSummary { path } => path,
            Op::Rename { src, .. } | Op::Rename2 { src, .. } => src,
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
}
