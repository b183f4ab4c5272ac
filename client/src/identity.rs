//! Who the client says it is (HDFS "simple" authentication): `--user`, else
//! `RAFTFS_USER`, else the operating-system user. Its groups are not the
//! client's to say: every member resolves a caller's groups itself (its
//! group mapping, `raftfs metaserver --group-mapping`), as a NameNode does,
//! and ignores the `groups` a request carries. The field stays for wire
//! compatibility.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
    /// Sent with every call and ignored by members (see the module docs).
    pub groups: Vec<String>,
}

impl Identity {
    pub fn new(user: &str, groups: &[&str]) -> Identity {
        Identity {
            user: user.to_string(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    /// Resolve the caller from an explicit `--user`, the environment, or the OS.
    pub fn resolve(explicit: Option<&str>) -> Identity {
        let user = explicit
            .map(str::to_string)
            .or_else(|| std::env::var("RAFTFS_USER").ok().filter(|u| !u.is_empty()))
            .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
            .or_else(|| std::env::var("LOGNAME").ok().filter(|u| !u.is_empty()))
            .unwrap_or_else(|| "root".to_string());
        Identity {
            user,
            groups: Vec::new(),
        }
    }
}
