//! raftfs's namespace answers as Hadoop's messages.

use raftfs_proto::{ContentSummary, DirectoryListing, FileStatus};

use crate::wire::hdfs::{self, FsPermission, HdfsFileStatus, FILE_TYPE_DIR, FILE_TYPE_FILE};

/// A file's or directory's status; `name` is what goes in `path` (the
/// last component in a listing, empty for getFileInfo, as HDFS sends it).
pub fn file_status(s: &FileStatus, name: &[u8]) -> HdfsFileStatus {
    HdfsFileStatus {
        file_type: if s.is_dir() { FILE_TYPE_DIR } else { FILE_TYPE_FILE },
        path: name.to_vec(),
        length: s.length,
        permission: FsPermission {
            perm: u32::from(s.permission.0),
        },
        owner: s.owner.clone(),
        group: s.group.clone(),
        modification_time: s.modification_time.max(0) as u64,
        access_time: s.access_time.max(0) as u64,
        block_replication: Some(u32::from(s.replication)),
        blocksize: Some(s.block_size),
        locations: None,
        file_id: Some(s.file_id),
        children_num: Some(i32::try_from(s.children_num).unwrap_or(i32::MAX)),
        storage_policy: Some(0),
        flags: Some(0),
    }
}

/// One page of a listing.
pub fn listing(l: &DirectoryListing) -> hdfs::DirectoryListing {
    hdfs::DirectoryListing {
        partial_listing: l
            .entries
            .iter()
            .map(|e| file_status(e, e.path_suffix.as_bytes()))
            .collect(),
        remaining_entries: u32::try_from(l.remaining_entries).unwrap_or(u32::MAX),
    }
}

/// A Java long sent as uint64 (-1, "no quota", is 2^64 - 1).
fn java_long(v: i64) -> u64 {
    v as u64
}

pub fn content_summary(c: &ContentSummary) -> hdfs::ContentSummary {
    hdfs::ContentSummary {
        length: c.length,
        file_count: c.file_count,
        directory_count: c.directory_count,
        quota: java_long(c.quota),
        space_consumed: c.space_consumed,
        space_quota: java_long(c.space_quota),
    }
}

pub fn quota_usage(c: &ContentSummary) -> hdfs::QuotaUsage {
    hdfs::QuotaUsage {
        file_and_directory_count: c.file_count + c.directory_count,
        quota: java_long(c.quota),
        space_consumed: c.space_consumed,
        space_quota: java_long(c.space_quota),
    }
}
