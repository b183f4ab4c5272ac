//! The calls a router makes on nameservices for itself, as the superuser
//! and with its own client id ([`CallRouter::own_call`]): making a mount
//! point's quota one the nameservice enforces exactly, and telling a
//! nameservice which paths it owns.

use raftfs_client::federated::CallRouter;
use raftfs_federation::{Federation, MountQuota};
use raftfs_proto::{FsError, Op, Permission, QuotaSetting};

use super::RouterCalls;

/// Make mount point `source`'s quota one its nameservice enforces: the
/// destination directory is made if missing and given `quota` as its HDFS
/// quota, so the nameservice refuses the call that would pass it, exactly
/// (RBF's mount quotas are checked by the router against usage it
/// refreshes every minute). A mount point over several nameservices is
/// refused: no one nameservice could hold the whole to its quota.
/// Idempotent; a source that is not a mount point is left to the table
/// change to refuse.
pub async fn enforce_mount_quota(calls: &RouterCalls, source: &str, quota: MountQuota) -> Result<(), FsError> {
    let fed = calls.table().current();
    let Some(entry) = fed.mounts().get(source) else {
        return Ok(());
    };
    let [d] = entry.destinations.as_slice() else {
        return Err(FsError::Unsupported(format!(
            "{source} spreads over {} nameservices: a quota over several nameservices cannot be enforced \
             exactly; set a quota on each destination through its nameservice (dfsadmin -setQuota)",
            entry.destinations.len()
        )));
    };
    let setting = |q: Option<u64>| q.map_or(QuotaSetting::Clear, QuotaSetting::Set);
    let mkdirs = Op::Mkdirs {
        path: d.path.clone(),
        permission: Permission::new(entry.mode),
        create_parent: true,
    };
    let set = Op::SetQuota {
        path: d.path.clone(),
        namespace: setting(quota.ns_quota),
        space: setting(quota.ss_quota),
    };
    for op in [mkdirs, set] {
        calls.own_call(&fed, &d.nameservice, &op).await?;
    }
    Ok(())
}

/// Tell nameservice `ns` the paths it owns at table `version`.
pub async fn push_ownership<T: raftfs_client::federated::TableSource>(
    calls: &CallRouter<T>,
    fed: &Federation,
    ns: &str,
    version: u64,
    prefixes: Vec<String>,
) -> Result<(), FsError> {
    calls
        .own_call(fed, ns, &Op::SetOwnership { version, prefixes })
        .await
        .map(|_| ())
}
