//! A Raft group member's directory and its identity file (HDFS's
//! `current/VERSION`), for nameservice members and routers alike.
//!
//! ```text
//! <dir>/current/VERSION   identity: cluster, group, member, peers (JSON)
//! <dir>/raft-log/         the Raft log and vote (RocksDB)
//! <dir>/snapshots/        the latest snapshots (see crate::snapshot)
//! <dir>/namespace/        a nameservice member's store (RocksDB; absent for --store memory)
//! ```
//! `format` writes VERSION once and refuses a directory that has one; a
//! member refuses to start on an unformatted directory, on another
//! cluster's, on another kind of node's, or under another member id, with
//! a message that says so.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The layout version written by this code (HDFS keeps negative numbers; we count up).
pub const LAYOUT_VERSION: u32 = 1;
/// `node_type` of a nameservice member's directory.
pub const NODE_TYPE_METASERVER: &str = "METASERVER";
/// `node_type` of a router's directory (its group is the mount table:
/// `namespace_id` is [`crate::MOUNT_TABLE_GROUP_ID`], no block pool).
pub const NODE_TYPE_ROUTER: &str = "ROUTER";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionFile {
    pub layout_version: u32,
    pub node_type: String,
    pub cluster_id: String,
    pub namespace_id: u64,
    pub block_pool_id: String,
    /// The nameservice's name; for routers, the name of their group.
    pub nameservice: String,
    pub member_id: u64,
    /// Initial voters: member id → address (host:port).
    pub members: BTreeMap<u64, String>,
    pub superuser: String,
    /// Milliseconds since the epoch at format.
    pub ctime_ms: i64,
    /// Formatted to join a running nameservice (`raftfs format --join`):
    /// never initializes a Raft group of its own; it waits to be added
    /// (`haadmin -addMember`) and receives the namespace from the leader.
    #[serde(default)]
    pub join: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("{dir} is not formatted (no current/VERSION): run `raftfs format` first")]
    NotFormatted { dir: String },
    #[error("{dir} is already formatted (cluster {cluster_id}); refusing to format it again")]
    AlreadyFormatted { dir: String, cluster_id: String },
    #[error("{dir} belongs to cluster {found}, not {expected}")]
    WrongCluster {
        dir: String,
        found: String,
        expected: String,
    },
    #[error("{dir} is a {found} directory, not a {expected} one")]
    WrongNodeType {
        dir: String,
        found: String,
        expected: String,
    },
    #[error("{dir} belongs to member {found}, not {expected}")]
    WrongMember { dir: String, found: u64, expected: u64 },
    #[error("{dir}/current/VERSION is unreadable: {detail}")]
    Corrupt { dir: String, detail: String },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
}

pub fn version_path(dir: &Path) -> PathBuf {
    dir.join("current").join("VERSION")
}
pub fn raft_log_dir(dir: &Path) -> PathBuf {
    dir.join("raft-log")
}
pub fn namespace_dir(dir: &Path) -> PathBuf {
    dir.join("namespace")
}

/// Write VERSION into a new (or empty) member directory.
pub fn format(dir: &Path, v: &VersionFile) -> Result<(), LayoutError> {
    if let Ok(existing) = read(dir) {
        return Err(LayoutError::AlreadyFormatted {
            dir: dir.display().to_string(),
            cluster_id: existing.cluster_id,
        });
    }
    let cur = dir.join("current");
    fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> LayoutError {
        let path = path.display().to_string();
        move |source| LayoutError::Io { what, path, source }
    }
    std::fs::create_dir_all(&cur).map_err(io("create directory", &cur))?;
    let tmp = cur.join("VERSION.tmp");
    let json = serde_json::to_vec_pretty(v).expect("serialize VERSION");
    let mut f = std::fs::File::create(&tmp).map_err(io("create", &tmp))?;
    f.write_all(&json).map_err(io("write", &tmp))?;
    f.sync_all().map_err(io("sync", &tmp))?;
    let path = version_path(dir);
    std::fs::rename(&tmp, &path).map_err(io("rename", &path))?;
    Ok(())
}

/// Read VERSION of a formatted member directory.
pub fn read(dir: &Path) -> Result<VersionFile, LayoutError> {
    let path = version_path(dir);
    let raw = match std::fs::read(&path) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(LayoutError::NotFormatted {
                dir: dir.display().to_string(),
            })
        }
        Err(source) => {
            return Err(LayoutError::Io {
                what: "read",
                path: path.display().to_string(),
                source,
            })
        }
    };
    serde_json::from_slice(&raw).map_err(|e| LayoutError::Corrupt {
        dir: dir.display().to_string(),
        detail: e.to_string(),
    })
}

/// Read VERSION and check it is the member we mean to start: a node of
/// `node_type`, numbered `member_id`, of `cluster_id` when given.
pub fn check(
    dir: &Path,
    node_type: &str,
    member_id: u64,
    cluster_id: Option<&str>,
) -> Result<VersionFile, LayoutError> {
    let v = read(dir)?;
    if v.node_type != node_type {
        return Err(LayoutError::WrongNodeType {
            dir: dir.display().to_string(),
            found: v.node_type,
            expected: node_type.into(),
        });
    }
    if v.member_id != member_id {
        return Err(LayoutError::WrongMember {
            dir: dir.display().to_string(),
            found: v.member_id,
            expected: member_id,
        });
    }
    if let Some(c) = cluster_id {
        if v.cluster_id != c {
            return Err(LayoutError::WrongCluster {
                dir: dir.display().to_string(),
                found: v.cluster_id,
                expected: c.into(),
            });
        }
    }
    Ok(v)
}
