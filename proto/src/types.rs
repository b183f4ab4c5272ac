//! What the namespace reports about files and directories, in the shapes of
//! Hadoop's `FileStatus`, `DirectoryListing` and `ContentSummary`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// POSIX permission bits plus the sticky bit (`0o1000`), as HDFS's `FsPermission`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Permission(pub u16);

impl Permission {
    pub const STICKY: u16 = 0o1000;
    /// All bits a permission may have.
    pub const MASK: u16 = 0o1777;

    pub fn new(bits: u16) -> Permission {
        Permission(bits & Self::MASK)
    }
    pub fn bits(self) -> u16 {
        self.0
    }
    pub fn sticky(self) -> bool {
        self.0 & Self::STICKY != 0
    }
    /// Parse octal (`755`, `1777`) as `hdfs dfs -chmod` takes it.
    pub fn parse_octal(s: &str) -> Option<Permission> {
        if s.is_empty() || s.len() > 4 {
            return None;
        }
        u16::from_str_radix(s, 8)
            .ok()
            .filter(|b| *b <= Self::MASK)
            .map(Permission)
    }
    /// Octal text without leading zeros beyond three digits, as WebHDFS prints it (`755`, `1777`).
    pub fn octal(self) -> String {
        format!("{:o}", self.0)
    }
}

impl fmt::Display for Permission {
    /// `rwxr-xr-x`, with `t`/`T` in the last place for the sticky bit, as `ls` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        let mut s = String::with_capacity(9);
        for shift in [6u16, 3, 0] {
            let x = (b >> shift) & 7;
            s.push(if x & 4 != 0 { 'r' } else { '-' });
            s.push(if x & 2 != 0 { 'w' } else { '-' });
            let exec = x & 1 != 0;
            if shift == 0 && self.sticky() {
                s.push(if exec { 't' } else { 'T' });
            } else {
                s.push(if exec { 'x' } else { '-' });
            }
        }
        f.write_str(&s)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileType {
    File,
    Directory,
}

/// One file or directory, as `getFileInfo` and `getListing` return it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStatus {
    /// The last path component (empty for the root); listings return names only.
    pub path_suffix: String,
    pub file_type: FileType,
    /// Bytes in the file; 0 for directories.
    pub length: u64,
    /// 0 for directories, as HDFS reports it.
    pub replication: u16,
    /// 0 for directories.
    pub block_size: u64,
    /// Milliseconds since the epoch (log time of the last change).
    pub modification_time: i64,
    pub access_time: i64,
    pub permission: Permission,
    pub owner: String,
    pub group: String,
    /// The inode id (`/.reserved/.inodes/<id>` resolves it).
    pub file_id: u64,
    /// Children of a directory; 0 for files.
    pub children_num: u64,
    /// True while a writer holds the file open.
    pub under_construction: bool,
}

impl FileStatus {
    pub fn is_dir(&self) -> bool {
        self.file_type == FileType::Directory
    }
    pub fn is_file(&self) -> bool {
        self.file_type == FileType::File
    }
}

/// One page of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectoryListing {
    pub entries: Vec<FileStatus>,
    /// Entries after this page (HDFS `remainingEntries`).
    pub remaining_entries: u64,
}

/// `getContentSummary`: totals over a subtree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentSummary {
    pub length: u64,
    pub file_count: u64,
    pub directory_count: u64,
    /// Namespace quota, -1 when none (HDFS convention).
    pub quota: i64,
    pub space_consumed: u64,
    /// Space quota in bytes, -1 when none.
    pub space_quota: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_text() {
        assert_eq!(Permission(0o755).to_string(), "rwxr-xr-x");
        assert_eq!(Permission(0o1777).to_string(), "rwxrwxrwt");
        assert_eq!(Permission(0o1776).to_string(), "rwxrwxrwT");
        assert_eq!(Permission(0o644).octal(), "644");
        assert_eq!(Permission::parse_octal("1777"), Some(Permission(0o1777)));
        assert_eq!(Permission::parse_octal("8"), None);
        assert_eq!(Permission::parse_octal("17777"), None);
    }
}
