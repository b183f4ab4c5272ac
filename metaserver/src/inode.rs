//! The replicated inode record (DESIGN.md §3, table `inode`).
//!
//! Directory entries live in their own table (`dentry`: (parent, name) →
//! child); an inode knows its parent's id (HDFS `INode.parent`) but not its
//! name, so the path of a file named by id (a block's file, a lease) can be
//! walked up for quota accounting. The overlay keeps `parent` in step with
//! the dentry that links the inode. Ids are never reused: HDFS reserves
//! 1..=16384 and gives the root 16385, and so do we.

use compact_str::CompactString;
use serde::{Deserialize, Serialize};

use raftfs_proto::{Block, FileStatus, FileType, Permission};

pub type InodeId = u64;

/// The root directory's id (HDFS `INodeId.ROOT_INODE_ID`).
pub const ROOT_ID: InodeId = 16385;
/// The first id handed to a new inode.
pub const FIRST_ALLOCATED_ID: InodeId = ROOT_ID + 1;
/// A directory outside the tree (no path reaches it; its parent is itself)
/// that holds the subtrees a recursive delete detached and the leader has
/// not reclaimed yet (`namespace::reclaim`). HDFS leaves ids below the
/// root's free; this is the one just below.
pub const DETACHED_ID: InodeId = ROOT_ID - 1;

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
        /// The file's blocks in order. `length` is the sum of their lengths;
        /// while the file is under construction its last block is being
        /// written and its length is the last one a writer reported.
        blocks: Vec<Block>,
    },
    Directory {
        children: u64,
        quota: Option<Box<Quota>>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inode {
    pub id: InodeId,
    /// The directory that links this inode (the root names itself).
    pub parent: InodeId,
    pub kind: InodeKind,
    pub permission: Permission,
    /// Inline up to 24 bytes (user and group names nearly always are): an
    /// inode read copies them without allocating and without touching a
    /// shared reference count (an `Arc<str>` per name, shared by every
    /// inode, was a cache line two reading threads fought over on every
    /// path component).
    pub owner: CompactString,
    pub group: CompactString,
    pub mtime: i64,
    pub atime: i64,
}

impl Inode {
    pub fn new_dir(id: InodeId, parent: InodeId, permission: Permission, owner: &str, group: &str, time: i64) -> Inode {
        Inode {
            id,
            parent,
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

    /// Bytes this inode charges against a space quota: length ×
    /// replication, where a block still being written counts as a whole
    /// block (as HDFS charges it, so a writer cannot overrun a quota).
    pub fn space_consumed(&self) -> u64 {
        match &self.kind {
            InodeKind::File {
                replication,
                length,
                block_size,
                lease_holder,
                blocks,
            } => {
                let mut bytes = *length;
                if let (Some(_), Some(last)) = (lease_holder, blocks.last()) {
                    bytes = bytes - last.num_bytes + last.num_bytes.max(*block_size);
                }
                bytes.saturating_mul(*replication as u64)
            }
            InodeKind::Directory { .. } => 0,
        }
    }

    /// The file's blocks (none for a directory).
    pub fn blocks(&self) -> &[Block] {
        match &self.kind {
            InodeKind::File { blocks, .. } => blocks,
            InodeKind::Directory { .. } => &[],
        }
    }

    /// A file's replication factor (0 for a directory).
    pub fn replication(&self) -> u16 {
        match self.kind {
            InodeKind::File { replication, .. } => replication,
            InodeKind::Directory { .. } => 0,
        }
    }

    /// A file's length in bytes (0 for a directory).
    pub fn length(&self) -> u64 {
        match self.kind {
            InodeKind::File { length, .. } => length,
            InodeKind::Directory { .. } => 0,
        }
    }

    /// A file's preferred block size (0 for a directory).
    pub fn block_size(&self) -> u64 {
        match self.kind {
            InodeKind::File { block_size, .. } => block_size,
            InodeKind::Directory { .. } => 0,
        }
    }

    /// True while a writer holds the file open.
    pub fn under_construction(&self) -> bool {
        self.lease_holder().is_some()
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
                ..
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
