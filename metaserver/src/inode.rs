//! The replicated inode record (DESIGN.md §3, table `inode`).
//!
//! Directory entries live in their own table (`dentry`: (parent, name) →
//! child); an inode does not know its name or parent, which keeps renames to
//! two dentry writes. Ids are never reused: HDFS reserves 1..=16384 and gives
//! the root 16385, and so do we.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use raftfs_proto::{FileStatus, FileType, Permission};

pub type InodeId = u64;

/// The root directory's id (HDFS `INodeId.ROOT_INODE_ID`).
pub const ROOT_ID: InodeId = 16385;
/// The first id handed to a new inode.
pub const FIRST_ALLOCATED_ID: InodeId = ROOT_ID + 1;

/// Quota settings and usage of a directory that has a quota
/// (HDFS `DirectoryWithQuotaFeature`). Usage counts the directory itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quota {
    pub ns_quota: Option<u64>,
    pub ds_quota: Option<u64>,
    pub ns_used: u64,
    pub ds_used: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum InodeKind {
    File {
        replication: u16,
        block_size: u64,
        length: u64,
        /// The client id holding the file open for writing, if any.
        lease_holder: Option<String>,
    },
    Directory {
        children: u64,
        quota: Option<Box<Quota>>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inode {
    pub id: InodeId,
    pub kind: InodeKind,
    pub permission: Permission,
    /// Shared: most inodes name one of a handful of users and groups, and
    /// reading an inode should not copy them.
    pub owner: Arc<str>,
    pub group: Arc<str>,
    pub mtime: i64,
    pub atime: i64,
}

impl Inode {
    pub fn new_dir(id: InodeId, permission: Permission, owner: &str, group: &str, time: i64) -> Inode {
        Inode {
            id,
            kind: InodeKind::Directory {
                children: 0,
                quota: None,
            },
            permission,
            owner: owner.into(),
            group: group.into(),
            mtime: time,
            atime: time,
        }
    }

    pub fn is_dir(&self) -> bool {
        matches!(self.kind, InodeKind::Directory { .. })
    }

    pub fn children(&self) -> u64 {
        match self.kind {
            InodeKind::Directory { children, .. } => children,
            InodeKind::File { .. } => 0,
        }
    }

    pub fn quota(&self) -> Option<&Quota> {
        match &self.kind {
            InodeKind::Directory { quota, .. } => quota.as_deref(),
            InodeKind::File { .. } => None,
        }
    }

    /// Bytes this inode charges against a space quota (length × replication).
    pub fn space_consumed(&self) -> u64 {
        match self.kind {
            InodeKind::File {
                replication, length, ..
            } => length.saturating_mul(replication as u64),
            InodeKind::Directory { .. } => 0,
        }
    }

    pub fn lease_holder(&self) -> Option<&str> {
        match &self.kind {
            InodeKind::File { lease_holder, .. } => lease_holder.as_deref(),
            InodeKind::Directory { .. } => None,
        }
    }

    pub fn status(&self, name: &str) -> FileStatus {
        let (file_type, length, replication, block_size, children_num, uc) = match &self.kind {
            InodeKind::File {
                replication,
                block_size,
                length,
                lease_holder,
            } => (
                FileType::File,
                *length,
                *replication,
                *block_size,
                0,
                lease_holder.is_some(),
            ),
            InodeKind::Directory { children, .. } => (FileType::Directory, 0, 0, 0, *children, false),
        };
        FileStatus {
            path_suffix: name.to_string(),
            file_type,
            length,
            replication,
            block_size,
            modification_time: self.mtime,
            access_time: self.atime,
            permission: self.permission,
            owner: self.owner.to_string(),
            group: self.group.to_string(),
            file_id: self.id,
            children_num,
            under_construction: uc,
        }
    }
}
