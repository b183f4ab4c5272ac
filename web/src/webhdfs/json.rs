//! The JSON shapes of WebHDFS's answers (Hadoop's `JsonUtil`), from
//! raftfs's types.

use raftfs_proto::{ContentSummary, FileStatus, FileType};
use serde::Serialize;
use serde_json::{json, Value};

/// One file's status, as Hadoop's `JsonUtil` writes it (the inner object
/// of `{"FileStatus": ...}`). Serialized straight from this struct: the
/// hot answer (GETFILESTATUS) builds no JSON map.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStatusJson<'a> {
    access_time: i64,
    block_size: u64,
    children_num: u64,
    file_id: u64,
    group: &'a str,
    length: u64,
    modification_time: i64,
    owner: &'a str,
    path_suffix: &'a str,
    /// Octal, as `"755"` (`"1777"` with the sticky bit).
    permission: String,
    replication: u16,
    storage_policy: u8,
    #[serde(rename = "type")]
    file_type: &'static str,
}

/// `s` in WebHDFS's shape.
pub fn file_status(s: &FileStatus) -> FileStatusJson<'_> {
    FileStatusJson {
        access_time: s.access_time,
        block_size: s.block_size,
        children_num: s.children_num,
        file_id: s.file_id,
        group: &s.group,
        length: s.length,
        modification_time: s.modification_time,
        owner: &s.owner,
        path_suffix: &s.path_suffix,
        permission: format!("{:o}", s.permission.bits()),
        replication: s.replication,
        storage_policy: 0,
        file_type: match s.file_type {
            FileType::Directory => "DIRECTORY",
            _ => "FILE",
        },
    }
}

/// `{"FileStatus": {...}}`.
#[derive(Debug, Serialize)]
pub struct OneFileStatus<'a> {
    #[serde(rename = "FileStatus")]
    pub file_status: FileStatusJson<'a>,
}

/// `{"FileStatus": [...]}`, the inside of `{"FileStatuses": ...}`.
#[derive(Debug, Serialize)]
pub struct FileStatusList<'a> {
    #[serde(rename = "FileStatus")]
    pub file_status: Vec<FileStatusJson<'a>>,
}

/// `{"FileStatuses": {"FileStatus": [...]}}`.
#[derive(Debug, Serialize)]
pub struct FileStatuses<'a> {
    #[serde(rename = "FileStatuses")]
    pub file_statuses: FileStatusList<'a>,
}

/// `entries` as `{"FileStatuses": {"FileStatus": [...]}}`.
pub fn file_statuses(entries: &[FileStatus]) -> FileStatuses<'_> {
    FileStatuses {
        file_statuses: FileStatusList {
            file_status: entries.iter().map(file_status).collect(),
        },
    }
}

/// `{"ContentSummary": {...}}`.
pub fn content_summary(c: &ContentSummary) -> Value {
    json!({ "ContentSummary": {
        "directoryCount": c.directory_count,
        "fileCount": c.file_count,
        "length": c.length,
        "quota": c.quota,
        "spaceConsumed": c.space_consumed,
        "spaceQuota": c.space_quota,
        "typeQuota": {},
    }})
}

/// `{"QuotaUsage": {...}}`, from the subtree's summary.
pub fn quota_usage(c: &ContentSummary) -> Value {
    json!({ "QuotaUsage": {
        "fileAndDirectoryCount": c.file_count + c.directory_count,
        "quota": c.quota,
        "spaceConsumed": c.space_consumed,
        "spaceQuota": c.space_quota,
        "typeQuota": {},
    }})
}

/// `{"FileChecksum": {...}}`: the algorithm's name and the checksum's
/// bytes in hex, as HDFS's `MD5MD5CRC32FileChecksum` writes them.
pub fn file_checksum(algorithm: &str, bytes: &[u8]) -> Value {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    json!({ "FileChecksum": {
        "algorithm": algorithm,
        "bytes": hex,
        "length": bytes.len(),
    }})
}

#[cfg(test)]
mod tests {
    use super::*;
    use raftfs_proto::Permission;

    #[test]
    fn a_status_is_hadoops_shape() {
        let s = FileStatus {
            path_suffix: "f".into(),
            file_type: FileType::File,
            length: 3,
            replication: 2,
            block_size: 1 << 20,
            modification_time: 7,
            access_time: 6,
            permission: Permission(0o1755),
            owner: "alice".into(),
            group: "supergroup".into(),
            file_id: 16390,
            children_num: 0,
            under_construction: false,
        };
        let v = serde_json::to_value(OneFileStatus {
            file_status: file_status(&s),
        })
        .unwrap();
        assert_eq!(v["FileStatus"]["permission"], "1755");
        assert_eq!(v["FileStatus"]["type"], "FILE");
        assert_eq!(v["FileStatus"]["blockSize"], 1 << 20);
        assert_eq!(v["FileStatus"]["accessTime"], 6);
        assert_eq!(v["FileStatus"]["pathSuffix"], "f");
        let l = serde_json::to_value(file_statuses(&[s])).unwrap();
        assert_eq!(l["FileStatuses"]["FileStatus"][0]["owner"], "alice");
    }
}
