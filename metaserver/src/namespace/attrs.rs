//! Planning the attribute changes (HDFS `setPermission`, `setOwner`,
//! `setReplication`, `setTimes`, `setQuota`): who may change what, and the
//! field-level mutations that do it.

use raftfs_proto::limits::MAX_REPLICATION;
use raftfs_proto::{FsError, OpResult, Permission, QuotaSetting};

use super::delta::{Attr, Mutation};
use super::permission::WRITE;
use super::plan::{check_principal, Planner};
use crate::inode::{InodeKind, ROOT_ID};
use crate::store::ReadView;

impl<V: ReadView + ?Sized> Planner<'_, V> {
    pub(crate) fn set_permission(&mut self, raw: &str, perm: Permission) -> Result<OpResult, FsError> {
        let (r, t) = self.resolve_existing(raw)?;
        if !self.caller.is_owner(&t) {
            return Err(FsError::AccessControl(format!(
                "Permission denied. user={} is not the owner of inode={}",
                self.caller.user, r.path.text
            )));
        }
        self.muts.push(Mutation::SetAttr {
            id: t.id,
            attr: Attr::Permission(perm),
        });
        Ok(OpResult::Unit)
    }

    pub(crate) fn set_owner(
        &mut self,
        raw: &str,
        owner: Option<&str>,
        group: Option<&str>,
    ) -> Result<OpResult, FsError> {
        if owner.is_none() && group.is_none() {
            return Err(FsError::InvalidArgument(
                "User name and group name cannot both be null".into(),
            ));
        }
        for name in owner.iter().chain(group.iter()) {
            check_principal(name)?;
        }
        let (r, t) = self.resolve_existing(raw)?;
        if !self.caller.superuser {
            if !self.caller.is_owner(&t) {
                return Err(FsError::AccessControl(format!(
                    "Permission denied. user={} is not the owner of inode={}",
                    self.caller.user, r.path.text
                )));
            }
            if owner.is_some_and(|o| o != &*t.owner) {
                return Err(FsError::AccessControl(format!(
                    "User {} is not a super user (non-super user cannot change owner).",
                    self.caller.user
                )));
            }
            if let Some(g) = group {
                if !self.caller.in_group(g) {
                    return Err(FsError::AccessControl(format!(
                        "User {} does not belong to {g}",
                        self.caller.user
                    )));
                }
            }
        }
        let attr = Attr::Owner {
            owner: owner.map(str::to_string),
            group: group.map(str::to_string),
        };
        self.muts.push(Mutation::SetAttr { id: t.id, attr });
        Ok(OpResult::Unit)
    }

    pub(crate) fn set_replication(&mut self, raw: &str, replication: u16) -> Result<OpResult, FsError> {
        if replication == 0 || replication > MAX_REPLICATION {
            return Err(FsError::InvalidArgument(format!(
                "Requested replication factor of {replication} is outside the allowed range 1..{MAX_REPLICATION} for {raw}"
            )));
        }
        let (r, t) = self.resolve_existing(raw)?;
        let InodeKind::File {
            replication: old,
            length,
            ..
        } = t.kind
        else {
            return Ok(OpResult::Bool(false));
        };
        self.caller.check(&t, WRITE, &r.path.text)?;
        let ds = length as i64 * (replication as i64 - old as i64);
        let upto = r.inodes.len() - 1;
        self.check_quota(&r, upto, 0, ds, &[])?;
        self.muts.push(Mutation::SetAttr {
            id: t.id,
            attr: Attr::Replication(replication),
        });
        self.charge(&r, upto, 0, ds, &[]);
        Ok(OpResult::Bool(true))
    }

    pub(crate) fn set_times(&mut self, raw: &str, mtime: Option<i64>, atime: Option<i64>) -> Result<OpResult, FsError> {
        let r = self.resolve(raw)?;
        let t = r
            .target()
            .cloned()
            .ok_or_else(|| FsError::FileNotFound(format!("File/Directory {} does not exist.", r.path.text)))?;
        self.caller.check(&t, WRITE, &r.path.text)?;
        self.muts.push(Mutation::SetAttr {
            id: t.id,
            attr: Attr::Times { mtime, atime },
        });
        Ok(OpResult::Unit)
    }

    pub(crate) fn set_quota(&mut self, raw: &str, ns: QuotaSetting, ds: QuotaSetting) -> Result<OpResult, FsError> {
        self.caller.require_superuser(" to set quotas")?;
        if ns == QuotaSetting::Set(0) || ds == QuotaSetting::Set(0) {
            // HDFS's own encoding in the message: Long.MAX_VALUE keeps, -1 clears.
            let show = |q: QuotaSetting| match q {
                QuotaSetting::Keep => i64::MAX.to_string(),
                QuotaSetting::Clear => "-1".to_string(),
                QuotaSetting::Set(v) => v.to_string(),
            };
            return Err(FsError::InvalidArgument(format!(
                "Invalid values for quota : {} and {}",
                show(ns),
                show(ds)
            )));
        }
        let r = self.resolve(raw)?;
        let t = r
            .target()
            .cloned()
            .ok_or_else(|| FsError::FileNotFound(format!("Directory does not exist: {}", r.path.text)))?;
        if !t.is_dir() {
            return Err(FsError::FileNotFound(format!(
                "Cannot set quota on a file: {}",
                r.path.text
            )));
        }
        if t.id == ROOT_ID && ns == QuotaSetting::Clear {
            return Err(FsError::InvalidArgument("Cannot clear namespace quota on root.".into()));
        }
        let old = t.quota().copied();
        let pick = |s: QuotaSetting, cur: Option<u64>| match s {
            QuotaSetting::Keep => cur,
            QuotaSetting::Clear => None,
            QuotaSetting::Set(v) => Some(v),
        };
        let ns_quota = pick(ns, old.and_then(|q| q.ns_quota));
        let ds_quota = pick(ds, old.and_then(|q| q.ds_quota));
        let (ns_used, ds_used) = match old {
            Some(q) => (q.ns_used, q.ds_used),
            None => super::read::count_subtree(self.view, &t)?,
        };
        self.muts.push(Mutation::SetAttr {
            id: t.id,
            attr: Attr::Quota {
                ns_quota,
                ds_quota,
                ns_used,
                ds_used,
            },
        });
        Ok(OpResult::Unit)
    }
}
