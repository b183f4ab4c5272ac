//! How a path of the federated namespace reaches a nameservice: the pure
//! half of routing, shared by the router (which forwards calls) and the
//! SDK's direct mode (which sends them itself).
//!
//! [`locate`] says where a path lives: under a mount point (its entry and
//! the destinations in the entry's order, disabled nameservices left out),
//! or above the mount points (the root, or a directory on the way to one:
//! a *virtual* directory only routers know, holding only mount points), or
//! nowhere ([`FsError::Unroutable`]). [`retarget`] rewrites an operation's
//! path for the nameservice it goes to.
//!
//! Guarantees: the same federation version routes a path the same way
//! everywhere; a path is checked and normalized before it is routed
//! (`/a//b/` is `/a/b`; a relative path or a `..` component is
//! [`FsError::InvalidPath`], in the words a namespace uses:
//! [`raftfs_proto::path_rules`]), so `/data/../etc` never escapes a mount
//! point.

use std::borrow::Cow;

use raftfs_proto::{path_rules, FsError, Op};

use crate::federation::Federation;
use crate::mount_table::{Destination, MountEntry};

/// Where a path lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location<'a> {
    /// Under the mount point `entry` (the part below it is
    /// [`Location::rest`]), `candidates` the destinations of the path, the
    /// one the entry's order picks first, none disabled.
    Mounted {
        path: Cow<'a, str>,
        entry: &'a MountEntry,
        candidates: Vec<Destination>,
    },
    /// Above the mount points: the root or a directory on the way to one.
    /// It holds only the mount points below it (`children`, names, sorted).
    Virtual { path: Cow<'a, str>, children: Vec<String> },
}

impl Location<'_> {
    /// The normalized path located.
    pub fn path(&self) -> &str {
        match self {
            Location::Mounted { path, .. } | Location::Virtual { path, .. } => path,
        }
    }

    /// The components below the mount point, joined (`a/b`; empty at the
    /// mount point itself and above the mount points).
    pub fn rest(&self) -> &str {
        match self {
            Location::Mounted { path, entry, .. } => path[entry.source.len()..].trim_start_matches('/'),
            Location::Virtual { .. } => "",
        }
    }

    /// True for the mount point itself (not a path below it).
    pub fn is_mount_point(&self) -> bool {
        matches!(self, Location::Mounted { .. }) && self.rest().is_empty()
    }
}

/// Where `path` lives in `fed` (see the module docs). Allocates only the
/// destinations' paths when `path` is normal and no destination disabled.
pub fn locate<'a>(fed: &'a Federation, path: &'a str) -> Result<Location<'a>, FsError> {
    // A client's path, checked as a namespace checks it (same words).
    let path = path_rules::normalized(path)?;
    let table = fed.mounts();
    let resolved = table.resolve(&path).map(|r| (r.entry, r.candidates));
    match resolved {
        Some((entry, candidates)) => {
            let candidates = if candidates.iter().any(|d| table.is_disabled(&d.nameservice)) {
                let (enabled, disabled): (Vec<Destination>, Vec<Destination>) =
                    candidates.into_iter().partition(|d| !table.is_disabled(&d.nameservice));
                if enabled.is_empty() {
                    let names: Vec<&str> = disabled.iter().map(|d| d.nameservice.as_str()).collect();
                    return Err(FsError::Unroutable(format!(
                        "Cannot find locations for {path}: its nameservice {} is disabled \
                         (routeradmin -nameservice enable)",
                        names.join(",")
                    )));
                }
                enabled
            } else {
                candidates
            };
            Ok(Location::Mounted {
                path,
                entry,
                candidates,
            })
        }
        None => {
            let children = table.child_mount_names(&path);
            if children.is_empty() && path != "/" {
                return Err(FsError::Unroutable(format!(
                    "Cannot find locations for {path}: no mount point covers it (routeradmin -ls)"
                )));
            }
            Ok(Location::Virtual { path, children })
        }
    }
}

/// `op` with its path (the source, for a rename) replaced by `path`.
/// Operations without a path come back unchanged.
pub fn retarget(op: &Op, path: &str) -> Op {
    retarget_to(op, path.to_string())
}

/// [`retarget`] with the new path given owned (not copied again).
pub fn retarget_to(op: &Op, path: String) -> Op {
    let mut op = op.clone();
    match &mut op {
        Op::Mkdirs { path: p, .. }
        | Op::Create { path: p, .. }
        | Op::Complete { path: p, .. }
        | Op::Delete { path: p, .. }
        | Op::SetPermission { path: p, .. }
        | Op::SetOwner { path: p, .. }
        | Op::SetReplication { path: p, .. }
        | Op::SetTimes { path: p, .. }
        | Op::SetQuota { path: p, .. }
        | Op::GetFileInfo { path: p }
        | Op::GetListing { path: p, .. }
        | Op::GetContentSummary { path: p }
        | Op::AddBlock { path: p, .. }
        | Op::AbandonBlock { path: p, .. }
        | Op::GetBlockLocations { path: p, .. }
        | Op::UpdateBlockForPipeline { path: p, .. }
        | Op::UpdatePipeline { path: p, .. }
        | Op::GetAdditionalDatanode { path: p, .. }
        | Op::RecoverLease { path: p }
        | Op::Append { path: p }
        | Op::Truncate { path: p, .. }
        | Op::Rename { src: p, .. }
        | Op::Rename2 { src: p, .. }
        | Op::Concat { target: p, .. } => *p = path,
        Op::RenewLease
        | Op::CommitBlockSynchronization { .. }
        | Op::SetDatanodeAdmin { .. }
        | Op::GetDelegationToken { .. }
        | Op::RenewDelegationToken { .. }
        | Op::CancelDelegationToken { .. }
        | Op::AddDelegationKey { .. }
        | Op::ExpireDelegationTokens { .. }
        | Op::SetOwnership { .. } => {}
    }
    op
}

/// A rename's destination, for the operations that have one.
pub fn rename_destination(op: &Op) -> Option<&str> {
    match op {
        Op::Rename { dst, .. } | Op::Rename2 { dst, .. } => Some(dst),
        _ => None,
    }
}

/// `op` (a rename) with its source and destination replaced.
pub fn retarget_rename(op: &Op, src: &str, dst: &str) -> Op {
    let mut op = retarget(op, src);
    if let Op::Rename { dst: d, .. } | Op::Rename2 { dst: d, .. } = &mut op {
        *d = dst.to_string();
    }
    op
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::federation::{FederationChange, NameserviceRecord};
    use crate::mount_table::tests::entry;
    use crate::mount_table::MountTableChange;

    fn fed() -> Federation {
        let mut f = Federation::new();
        for (i, name) in ["ns1", "ns2"].iter().enumerate() {
            f.apply(FederationChange::AddNameservice(NameserviceRecord {
                name: name.to_string(),
                namespace_id: i as u64 + 1,
                block_pool_id: format!("BP-{i}"),
                members: [(1, format!("127.0.0.1:{}", 9000 + i))].into_iter().collect(),
            }))
            .unwrap();
        }
        for e in [
            entry("/user", &[("ns1", "/user")]),
            entry("/a/b/c", &[("ns2", "/c")]),
            entry("/shared", &[("ns1", "/shared"), ("ns2", "/shared")]),
        ] {
            f.apply(FederationChange::Mount(MountTableChange::Add(e))).unwrap();
        }
        f
    }

    #[test]
    fn mounted_virtual_and_unroutable_paths() {
        let f = fed();
        let l = locate(&f, "/user//alice/").unwrap();
        match &l {
            Location::Mounted { path, candidates, .. } => {
                assert_eq!((&**path, l.rest()), ("/user/alice", "alice"));
                assert_eq!(candidates[0].path, "/user/alice");
            }
            other => panic!("{other:?}"),
        }
        assert!(!l.is_mount_point());
        assert!(locate(&f, "/user").unwrap().is_mount_point());
        assert_eq!(
            locate(&f, "/").unwrap(),
            Location::Virtual {
                path: "/".into(),
                children: vec!["a".into(), "shared".into(), "user".into()]
            }
        );
        assert_eq!(
            locate(&f, "/a/b").unwrap(),
            Location::Virtual {
                path: "/a/b".into(),
                children: vec!["c".into()]
            }
        );
        assert!(matches!(locate(&f, "/tmp"), Err(FsError::Unroutable(m)) if m.contains("no mount point")));
        assert!(matches!(locate(&f, "/user/../etc"), Err(FsError::InvalidPath(_))));
        assert!(matches!(locate(&f, "user"), Err(FsError::InvalidPath(_))));
    }

    #[test]
    fn disabled_nameservices_are_left_out() {
        let mut f = fed();
        f.apply(FederationChange::Mount(MountTableChange::DisableNameservice {
            nameservice: "ns2".into(),
            disabled: true,
        }))
        .unwrap();
        match locate(&f, "/shared/x").unwrap() {
            Location::Mounted { candidates, .. } => {
                assert_eq!(candidates.len(), 1);
                assert_eq!(candidates[0].nameservice, "ns1");
            }
            other => panic!("{other:?}"),
        }
        let e = locate(&f, "/a/b/c/d").unwrap_err();
        assert!(
            matches!(&e, FsError::Unroutable(m) if m.contains("ns2 is disabled")),
            "{e:?}"
        );
    }

    #[test]
    fn retarget_rewrites_every_path() {
        let op = Op::Rename2 {
            src: "/user/a".into(),
            dst: "/user/b".into(),
            overwrite: true,
        };
        assert_eq!(
            retarget_rename(&op, "/u/a", "/u/b"),
            Op::Rename2 {
                src: "/u/a".into(),
                dst: "/u/b".into(),
                overwrite: true
            }
        );
        assert_eq!(rename_destination(&op), Some("/user/b"));
        let op = Op::GetFileInfo { path: "/user/a".into() };
        assert_eq!(retarget(&op, "/x"), Op::GetFileInfo { path: "/x".into() });
        assert_eq!(retarget(&Op::RenewLease, "/x"), Op::RenewLease);
    }
}
