//! The JSON shapes of WebHDFS's answers (Hadoop's `JsonUtil`), from
//! raftfs's types.

use raftfs_proto::{ContentSummary, FileStatus, FileType};
use serde_json::{json, Value};

/// `{"accessTime", ..., "type"}`: one file's status (the inner object).
pub fn file_status(s: &FileStatus) -> Value {
    json!({
        "accessTime": s.access_time,
        "blockSize": s.block_size,
        "childrenNum": s.children_num,
        "fileId": s.file_id,
        "group": s.group,
        "length": s.length,
        "modificationTime": s.modification_time,
        "owner": s.owner,
        "pathSuffix": s.path_suffix,
        "permission": format!("{:o}", s.permission.bits()),
        "replication": s.replication,
        "storagePolicy": 0,
        "type": match s.file_type {
            FileType::Directory => "DIRECTORY",
            _ => "FILE",
        },
    })
}

/// `{"FileStatuses": {"FileStatus": [...]}}`.
pub fn file_statuses(entries: &[FileStatus]) -> Value {
    json!({ "FileStatuses": { "FileStatus": entries.iter().map(file_status).collect::<Vec<_>>() } })
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
        let v = file_status(&s);
        assert_eq!(v["permission"], "1755");
        assert_eq!(v["type"], "FILE");
        assert_eq!(v["blockSize"], 1 << 20);
        assert_eq!(file_statuses(&[s])["FileStatuses"]["FileStatus"][0]["owner"], "alice");
    }
}
