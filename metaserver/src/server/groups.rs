//! [`GroupMapping`]: a caller's groups, decided by the member that serves
//! the call, never taken from the client (HDFS resolves groups on the
//! NameNode too: `hadoop.security.group.mapping`).
//!
//! Where groups come from:
//! * the mapping file (`--group-mapping FILE`: a JSON object of user name →
//!   list of group names), for the users it names, like HDFS's static
//!   mapping overrides;
//! * for every other user, the member host's own user database: the user's
//!   primary and supplementary groups (`getgrouplist`), like HDFS's default
//!   shell-based Unix mapping. A user the host does not know has no groups.
//!
//! Guarantees: a caller's groups are the ones this member resolved, so
//! claiming `supergroup` from a client makes no one a superuser. The
//! leader resolves a write's groups before the write is planned or
//! proposed, so in `--exec apply`, where every member plans the op again,
//! they plan it with the groups the leader resolved (carried in the log
//! entry), not their own. Answers are cached for
//! [`GROUP_CACHE_TTL_MS`] (HDFS's `hadoop.security.groups.cache.secs`,
//! 300 s) in a cache of at most [`MAX_CACHED_GROUP_USERS`] users;
//! `dfsadmin -refreshUserToGroupsMappings` rereads the file and empties the
//! cache at once.
//!
//! Caveats: the host's user database is read on the calling task (as
//! HDFS's handler threads do); a slow NSS source (LDAP) slows the first
//! call of each user per TTL. A member keeps the mapping it last read
//! successfully: a refresh that finds the file unreadable or malformed
//! fails and changes nothing.

use std::collections::HashMap;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use raftfs_proto::limits::MAX_GROUPS_PER_CALLER;
use raftfs_proto::FsError;

use crate::namespace::check_principal;

/// How long a user's resolved groups are reused (HDFS's default, 300 s).
pub const GROUP_CACHE_TTL_MS: u64 = 300_000;
/// Users whose groups are cached at once; the cache is emptied when full.
pub const MAX_CACHED_GROUP_USERS: usize = 4_096;
/// Largest mapping file a member reads.
pub const MAX_GROUP_MAPPING_FILE_BYTES: u64 = 4 << 20;

/// Resolves callers' groups (see the module docs).
pub struct GroupMapping {
    file: Option<PathBuf>,
    /// The mapping file's users, as last read.
    fixed: RwLock<HashMap<String, Vec<String>>>,
    cache: Mutex<HashMap<String, (Vec<String>, Instant)>>,
}

impl GroupMapping {
    /// A mapping that reads `file` (if any) now; an unreadable or malformed
    /// file is an error, so a member does not start with groups it did not mean.
    pub fn open(file: Option<&Path>) -> Result<GroupMapping, FsError> {
        let fixed = match file {
            Some(f) => read_mapping_file(f)?,
            None => HashMap::new(),
        };
        Ok(GroupMapping {
            file: file.map(Path::to_path_buf),
            fixed: RwLock::new(fixed),
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The groups of the caller `user`: none for a name that is not a
    /// valid principal (the call's own checks refuse it, naming the user),
    /// so such a name never reaches the host's group lookup.
    pub fn groups_of_caller(&self, user: &str) -> Vec<String> {
        if check_principal(user).is_ok() {
            self.groups_of(user)
        } else {
            Vec::new()
        }
    }

    /// The groups of `user`.
    pub fn groups_of(&self, user: &str) -> Vec<String> {
        if let Some(g) = self.fixed.read().get(user) {
            return g.clone();
        }
        let now = Instant::now();
        if let Some((g, at)) = self.cache.lock().get(user) {
            if now.duration_since(*at) < Duration::from_millis(GROUP_CACHE_TTL_MS) {
                return g.clone();
            }
        }
        let g = host_groups(user);
        let mut cache = self.cache.lock();
        if cache.len() >= MAX_CACHED_GROUP_USERS {
            cache.clear();
        }
        cache.insert(user.to_string(), (g.clone(), now));
        g
    }

    /// Read the mapping file again and forget every cached answer
    /// (`dfsadmin -refreshUserToGroupsMappings`). On error nothing changes.
    pub fn refresh(&self) -> Result<(), FsError> {
        if let Some(f) = &self.file {
            let fresh = read_mapping_file(f)?;
            *self.fixed.write() = fresh;
        }
        self.cache.lock().clear();
        Ok(())
    }
}

/// The mapping file's users and groups, checked: every name a valid
/// principal, at most [`MAX_GROUPS_PER_CALLER`] groups a user.
fn read_mapping_file(path: &Path) -> Result<HashMap<String, Vec<String>>, FsError> {
    let bad = |what: String| FsError::InvalidArgument(format!("group mapping {}: {what}", path.display()));
    let len = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?.len();
    if len > MAX_GROUP_MAPPING_FILE_BYTES {
        return Err(bad(format!("{len} bytes, more than {MAX_GROUP_MAPPING_FILE_BYTES}")));
    }
    let raw = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let map: HashMap<String, Vec<String>> = serde_json::from_slice(&raw).map_err(|e| {
        bad(format!(
            "expected a JSON object of user name to a list of group names: {e}"
        ))
    })?;
    for (user, groups) in &map {
        check_principal(user).map_err(|_| bad(format!("invalid user name {user:?}")))?;
        if groups.len() > MAX_GROUPS_PER_CALLER {
            return Err(bad(format!(
                "user {user} has {} groups, more than {MAX_GROUPS_PER_CALLER}",
                groups.len()
            )));
        }
        for g in groups {
            check_principal(g).map_err(|_| bad(format!("invalid group name {g:?} of user {user}")))?;
        }
    }
    Ok(map)
}

/// `user`'s primary and supplementary groups on this host (none for a user
/// it does not know), primary first, at most [`MAX_GROUPS_PER_CALLER`].
fn host_groups(user: &str) -> Vec<String> {
    let Ok(Some(u)) = nix::unistd::User::from_name(user) else {
        return Vec::new();
    };
    let Ok(name) = CString::new(user) else {
        return Vec::new();
    };
    let gids = nix::unistd::getgrouplist(&name, u.gid).unwrap_or_else(|_| vec![u.gid]);
    let mut out: Vec<String> = Vec::new();
    for gid in std::iter::once(u.gid).chain(gids) {
        if let Ok(Some(g)) = nix::unistd::Group::from_gid(gid) {
            if !out.contains(&g.name) && check_principal(&g.name).is_ok() {
                out.push(g.name);
            }
        }
        if out.len() == MAX_GROUPS_PER_CALLER {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let p = dir.join("groups.json");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn the_file_decides_for_its_users_and_a_refresh_rereads_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = write(dir.path(), r#"{"alice": ["staff", "supergroup"], "bob": []}"#);
        let m = GroupMapping::open(Some(&f)).unwrap();
        assert_eq!(m.groups_of("alice"), ["staff", "supergroup"]);
        assert!(m.groups_of("bob").is_empty());
        write(dir.path(), r#"{"alice": ["staff"]}"#);
        assert_eq!(
            m.groups_of("alice"),
            ["staff", "supergroup"],
            "read again only on refresh"
        );
        m.refresh().unwrap();
        assert_eq!(m.groups_of("alice"), ["staff"]);
        write(dir.path(), r#"{"alice": ["bad:name"]}"#);
        let e = m.refresh().unwrap_err();
        assert!(matches!(e, FsError::InvalidArgument(_)), "{e:?}");
        assert_eq!(m.groups_of("alice"), ["staff"], "a failed refresh changes nothing");
        write(dir.path(), "[1, 2]");
        assert!(m.refresh().is_err(), "not an object");
    }

    #[test]
    fn other_users_get_the_hosts_groups() {
        let m = GroupMapping::open(None).unwrap();
        assert!(
            m.groups_of("no-such-user-raftfs").is_empty(),
            "a user the host does not know has no groups"
        );
        let root = m.groups_of("root");
        assert_eq!(
            root.first().map(String::as_str),
            Some("root"),
            "root's primary group first: {root:?}"
        );
    }

    #[test]
    fn a_missing_file_is_an_error_at_start() {
        let e = GroupMapping::open(Some(Path::new("/nonexistent/groups.json")))
            .err()
            .expect("missing file");
        assert!(matches!(e, FsError::InvalidArgument(_)), "{e:?}");
    }
}
