//! Who the client says it is: `--user`, else the user a certificate in
//! `RAFTFS_CREDENTIALS` names, else `RAFTFS_USER`, else the operating-system
//! user. Under HDFS-style "simple" authentication members trust the name;
//! under `--auth strong` they take the user from the certificate and refuse
//! a call that claims another. Its groups are not the
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

    /// Resolve the caller from an explicit `--user`, the user certificate in
    /// `RAFTFS_CREDENTIALS`, `RAFTFS_USER`, or the OS.
    pub fn resolve(explicit: Option<&str>) -> Identity {
        let user = explicit
            .map(str::to_string)
            .or_else(|| {
                let dir = std::env::var_os(crate::tls::CREDENTIALS_ENV).filter(|d| !d.is_empty())?;
                crate::tls::load_credentials(std::path::Path::new(&dir))
                    .ok()
                    .map(|c| c.identity().id.clone())
            })
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
