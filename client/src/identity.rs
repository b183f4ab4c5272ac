//! Who the client says it is (HDFS "simple" authentication): `--user`, else
//! `RAFTFS_USER`, else the operating-system user. Groups: the user's own
//! name plus any given in `RAFTFS_GROUPS` (comma-separated), as HDFS's group
//! mapping would resolve them on the server.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
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
        let mut groups = vec![user.clone()];
        if let Ok(extra) = std::env::var("RAFTFS_GROUPS") {
            groups.extend(
                extra
                    .split(',')
                    .map(str::trim)
                    .filter(|g| !g.is_empty())
                    .map(str::to_string),
            );
        }
        groups.dedup();
        Identity { user, groups }
    }
}
