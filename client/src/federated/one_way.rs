//! [`OneWay`]: the route of the common call, decided from the table alone:
//! a call on one path below a mount point with one (enabled)
//! destination, which goes there as it is but for its path.
//!
//! Why: most calls are this one, and the general routing
//! ([`CallRouter`](super::CallRouter)'s levels for fan-out, merging and the
//! router's own answers) cost a routed getFileInfo about a microsecond of
//! the client's CPU more than a direct one, most of it moving and
//! allocating what the plain case does not need. [`one_way`] is a
//! synchronous check; the call then makes one forward.
//!
//! Guarantee: a one-way call is answered exactly as the general routing
//! answers it. [`one_way`] never decides an answer itself: anything but
//! the plain case (a mount point itself, several destinations, a virtual
//! directory, an unroutable or invalid path, a write under a read-only
//! mount, any call that is not on one path) is `None`, and the general
//! routing takes it from the start.

use raftfs_federation::mount_table::join;
use raftfs_federation::routing::retarget_to;
use raftfs_federation::{Federation, MountEntry};
use raftfs_proto::{path_rules, FsError, Op, OpResult};

use super::merge::last_component;

/// One call's only destination, and the call as it goes there.
#[derive(Debug)]
pub(crate) struct OneWay<'f> {
    /// The nameservice the call goes to.
    pub nameservice: &'f str,
    /// The call, its path rewritten to the destination's.
    pub op: Op,
    /// Whether the call is getFileInfo, whose status answers with the
    /// federated path's last component (as the general routing names it).
    /// One way, the path continues below its mount point, so that is also
    /// the rewritten path's last component: nothing is kept for it.
    file_info: bool,
}

impl OneWay<'_> {
    /// The caller's answer from the nameservice's.
    pub fn answer(self, r: Result<OpResult, FsError>) -> Result<OpResult, FsError> {
        if !self.file_info {
            return r;
        }
        let name = last_component(self.op.src_path());
        match r? {
            OpResult::Status(found) => Ok(OpResult::Status(found.map(|mut s| {
                if s.path_suffix != name {
                    s.path_suffix = name.to_string();
                }
                s
            }))),
            other => Err(FsError::Internal(format!("getFileInfo answered {other:?}"))),
        }
    }
}

/// Whether `op` is routed by its one path alone, with nothing the router
/// adds to it (the calls the general routing sends to one destination as
/// they are); getFileInfo is handled apart (its answer is renamed).
fn by_its_path(op: &Op) -> bool {
    match op {
        Op::Mkdirs { .. }
        | Op::Create { .. }
        | Op::Complete { .. }
        | Op::Delete { .. }
        | Op::SetPermission { .. }
        | Op::SetOwner { .. }
        | Op::SetReplication { .. }
        | Op::SetTimes { .. }
        | Op::SetQuota { .. }
        | Op::AddBlock { .. }
        | Op::AbandonBlock { .. }
        | Op::GetBlockLocations { .. }
        | Op::UpdateBlockForPipeline { .. }
        | Op::UpdatePipeline { .. }
        | Op::GetAdditionalDatanode { .. }
        | Op::RecoverLease { .. }
        | Op::Append { .. }
        | Op::Truncate { .. } => true,
        Op::GetFileInfo { .. }
        | Op::GetListing { .. }
        | Op::GetContentSummary { .. }
        | Op::Rename { .. }
        | Op::Rename2 { .. }
        | Op::Concat { .. }
        | Op::RenewLease
        | Op::CommitBlockSynchronization { .. }
        | Op::SetDatanodeAdmin { .. }
        | Op::GetDelegationToken { .. }
        | Op::RenewDelegationToken { .. }
        | Op::CancelDelegationToken { .. }
        | Op::AddDelegationKey { .. }
        | Op::ExpireDelegationTokens { .. }
        | Op::SetOwnership { .. } => false,
    }
}

/// `op`'s one-way route in `fed`, if it has one (see the module docs).
/// It decides as `locate` would, without the candidates' list: the path
/// normalized (borrowed when it is normal), the longest prefix, its one
/// destination unless disabled.
pub(crate) fn one_way<'f>(fed: &'f Federation, op: &Op) -> Option<OneWay<'f>> {
    let file_info = matches!(op, Op::GetFileInfo { .. });
    if !file_info && !by_its_path(op) {
        return None;
    }
    let path = path_rules::normalized(op.src_path()).ok()?;
    let table = fed.mounts();
    let (entry, rest) = table.longest_prefix(&path)?;
    let [to] = entry.destinations.as_slice() else {
        return None;
    };
    // At the mount point itself the general routing answers (a mount
    // point stats as a directory and is never deleted).
    if rest.is_empty() || table.is_disabled(&to.nameservice) || refused_as_read_only(entry, op) {
        return None;
    }
    Some(OneWay {
        file_info,
        op: retarget_to(op, join(&to.path, rest)),
        nameservice: &to.nameservice,
    })
}

/// Whether `op` is a write the read-only mount `entry` refuses.
pub(crate) fn refused_as_read_only(entry: &MountEntry, op: &Op) -> bool {
    entry.read_only && op.is_write()
}

#[cfg(test)]
mod tests {
    use super::*;
    use raftfs_federation::{Destination, FederationChange, MountQuota, MountTableChange, NameserviceRecord, Order};
    use raftfs_proto::{FileStatus, FileType, Permission};

    fn mount(source: &str, to: &[(&str, &str)], read_only: bool) -> FederationChange {
        FederationChange::Mount(MountTableChange::Add(MountEntry {
            source: source.into(),
            destinations: to
                .iter()
                .map(|(ns, path)| Destination {
                    nameservice: ns.to_string(),
                    path: path.to_string(),
                })
                .collect(),
            order: Order::HashAll,
            read_only,
            owner: "hdfs".into(),
            group: "supergroup".into(),
            mode: 0o755,
            quota: MountQuota::default(),
        }))
    }

    /// ns1 and ns2; /data -> ns1:/d, /ro -> ns1:/ro (read-only), /shared
    /// over both, /a/b -> ns2:/b (so /a is a virtual directory).
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
        for change in [
            mount("/data", &[("ns1", "/d")], false),
            mount("/ro", &[("ns1", "/ro")], true),
            mount("/shared", &[("ns1", "/s"), ("ns2", "/s")], false),
            mount("/a/b", &[("ns2", "/b")], false),
        ] {
            f.apply(change).unwrap();
        }
        f
    }

    fn info(path: &str) -> Op {
        Op::GetFileInfo { path: path.into() }
    }

    fn mkdirs(path: &str) -> Op {
        Op::Mkdirs {
            path: path.into(),
            permission: Permission::new(0o755),
            create_parent: true,
        }
    }

    #[test]
    fn a_path_below_a_one_destination_mount_goes_there_rewritten() {
        let f = fed();
        let way = one_way(&f, &info("/data//x/y")).expect("one way");
        assert_eq!((way.nameservice, &way.op), ("ns1", &info("/d/x/y")));
        assert!(way.file_info);
        let way = one_way(&f, &mkdirs("/a/b/c")).expect("one way");
        assert_eq!((way.nameservice, &way.op), ("ns2", &mkdirs("/b/c")));
        assert!(!way.file_info);
        // A read-only mount still routes reads one way.
        assert!(one_way(&f, &info("/ro/x")).is_some());
    }

    #[test]
    fn anything_but_the_plain_case_is_left_to_the_general_routing() {
        let f = fed();
        let rename = Op::Rename {
            src: "/data/a".into(),
            dst: "/data/b".into(),
        };
        for (why, op) in [
            ("the mount point itself", info("/data")),
            (
                "a mount point deleted",
                Op::Delete {
                    path: "/data".into(),
                    recursive: true,
                },
            ),
            ("several destinations", info("/shared/x")),
            ("a virtual directory", info("/a")),
            ("no mount point", info("/elsewhere/x")),
            ("an invalid path", info("/data/../etc")),
            ("a write under a read-only mount", mkdirs("/ro/x")),
            ("two paths", rename),
            ("no path", Op::RenewLease),
            (
                "a listing",
                Op::GetListing {
                    path: "/data/x".into(),
                    start_after: String::new(),
                    limit: 0,
                },
            ),
        ] {
            assert!(one_way(&f, &op).is_none(), "{why}: {op:?}");
        }
        let mut f = f;
        f.apply(FederationChange::Mount(MountTableChange::DisableNameservice {
            nameservice: "ns1".into(),
            disabled: true,
        }))
        .unwrap();
        assert!(one_way(&f, &info("/data/x")).is_none(), "a disabled nameservice");
    }

    #[test]
    fn a_status_answers_with_the_federated_name() {
        let f = fed();
        let status = FileStatus {
            path_suffix: String::new(),
            file_type: FileType::File,
            length: 1,
            replication: 1,
            block_size: 1,
            modification_time: 0,
            access_time: 0,
            permission: Permission::new(0o644),
            owner: "alice".into(),
            group: "users".into(),
            file_id: 7,
            children_num: 0,
            under_construction: false,
        };
        let way = one_way(&f, &info("/data/x/y")).unwrap();
        match way.answer(Ok(OpResult::Status(Some(status)))) {
            Ok(OpResult::Status(Some(s))) => assert_eq!((s.path_suffix.as_str(), s.file_id), ("y", 7)),
            other => panic!("{other:?}"),
        }
        let way = one_way(&f, &info("/data/x/y")).unwrap();
        assert!(matches!(
            way.answer(Ok(OpResult::Status(None))),
            Ok(OpResult::Status(None))
        ));
        let way = one_way(&f, &info("/data/x/y")).unwrap();
        let refused = Err(FsError::NotOwned {
            version: 3,
            message: "moved".into(),
        });
        assert!(matches!(way.answer(refused), Err(FsError::NotOwned { version: 3, .. })));
        let way = one_way(&f, &mkdirs("/data/x")).unwrap();
        assert!(matches!(way.answer(Ok(OpResult::Bool(true))), Ok(OpResult::Bool(true))));
    }
}
