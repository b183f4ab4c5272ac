//! `plan`: validate one write operation against a view of committed state
//! and produce its [`Delta`] (DESIGN.md §4 step 2). Pure: no clock, no
//! randomness, no I/O beyond the view; ids come from the replicated counter
//! and times from the caller (the log entry's time).
//!
//! Semantics follow HDFS (see REFERENCE.md's table); messages follow the
//! texts HDFS prints, so a user can search for them.

use raftfs_proto::limits::{
    BYTES_PER_CHECKSUM, MAX_BLOCK_SIZE_BYTES, MAX_DIRECTORY_ITEMS, MAX_PRINCIPAL_LEN_BYTES, MAX_REPLICATION,
    MIN_BLOCK_SIZE_BYTES,
};
use raftfs_proto::{CallCtx, FsError, Op, OpResult, Permission};

use super::delta::{Delta, Mutation};
use super::permission::{Caller, ALL, WRITE};
use super::resolve::{resolve, Resolved};
use super::{next_inode_id, NsConfig};
use crate::inode::{Inode, InodeId, InodeKind};
use crate::path::FsPath;
use crate::store::ReadView;

/// Page size used when walking a subtree (delete, quota counts, summaries).
pub(crate) const SUBTREE_PAGE_ENTRIES: usize = 1024;

pub(crate) struct Planner<'a, V: ReadView + ?Sized> {
    pub(crate) view: &'a V,
    /// Set when planning on the leader (`--exec leader`).
    pub(crate) leader: Option<&'a LeaderEnv<'a>>,
    pub(crate) caller: Caller<'a>,
    pub(crate) ctx: &'a CallCtx,
    pub(crate) time: i64,
    pub(crate) muts: Vec<Mutation>,
    next_id: Option<InodeId>,
    pub(crate) next_block: Option<u64>,
    pub(crate) next_gen_stamp: Option<u64>,
}

/// What a plan made on the leader (`--exec leader`) uses instead of the
/// view's committed state: writes planned and not yet applied have taken
/// ids and quota that the view does not show yet.
pub struct LeaderEnv<'a> {
    /// Inode ids, block ids and generation stamps (never handed out twice).
    pub ids: &'a dyn IdSource,
    /// Quota usage of directories that writes in flight have charged.
    pub usage: &'a dyn PendingUsage,
    /// Whether this operation holds directory `id`'s inode lock in WRITE,
    /// so no other write below it is in flight.
    pub exclusive: &'a dyn Fn(InodeId) -> bool,
    /// Set by a plan that needs a directory's inode lock in WRITE (its
    /// child count is within [`MAX_LEADER_WRITES_IN_FLIGHT`] of the item
    /// limit): the plan fails, and the caller locks again and re-plans.
    pub escalate: std::cell::Cell<Option<InodeId>>,
}

/// The leader's counters, ahead of the committed ones by what writes in
/// flight took.
pub trait IdSource: Sync {
    fn inode_id(&self) -> InodeId;
    fn block_id(&self) -> u64;
    fn gen_stamp(&self) -> u64;
    /// A delegation token sequence number.
    fn delegation_seq(&self) -> u64;
}

/// Quota usage including writes planned and not yet applied.
pub trait PendingUsage: Sync {
    /// (names, bytes) used under directory `dir`, if writes in flight
    /// charged it; `None` means the committed value is current.
    fn usage(&self, dir: InodeId) -> Option<(u64, u64)>;
}

/// Most writes planned on the leader and not yet applied at once. A
/// directory's child count can grow by at most one per such write, which
/// is how close to [`MAX_DIRECTORY_ITEMS`] a plan may check a count it
/// read under a READ lock.
pub const MAX_LEADER_WRITES_IN_FLIGHT: usize = 4096;

/// Plan `op` for `ctx` at log time `time_ms` against `view` (`--exec
/// apply`: `view` holds every earlier write).
pub fn plan<V: ReadView + ?Sized>(
    cfg: &NsConfig,
    view: &V,
    ctx: &CallCtx,
    op: &Op,
    time_ms: i64,
) -> Result<Delta, FsError> {
    plan_with(cfg, view, None, ctx, op, time_ms)
}

/// Plan `op` on the leader, under the locks of its paths (`--exec leader`).
pub fn plan_on_leader<V: ReadView + ?Sized>(
    cfg: &NsConfig,
    view: &V,
    env: &LeaderEnv<'_>,
    ctx: &CallCtx,
    op: &Op,
    time_ms: i64,
) -> Result<Delta, FsError> {
    plan_with(cfg, view, Some(env), ctx, op, time_ms)
}

fn plan_with<V: ReadView + ?Sized>(
    cfg: &NsConfig,
    view: &V,
    leader: Option<&LeaderEnv<'_>>,
    ctx: &CallCtx,
    op: &Op,
    time_ms: i64,
) -> Result<Delta, FsError> {
    let mut p = Planner {
        view,
        leader,
        caller: Caller::new(ctx, &cfg.superuser, &cfg.supergroup),
        ctx,
        time: time_ms,
        muts: Vec::new(),
        next_id: None,
        next_block: None,
        next_gen_stamp: None,
    };
    p.check_owned(op)?;
    let result = match op {
        Op::Mkdirs {
            path,
            permission,
            create_parent,
        } => p.mkdirs(path, *permission, *create_parent)?,
        Op::Create {
            path,
            permission,
            overwrite,
            create_parent,
            replication,
            block_size,
        } => p.create(path, *permission, *overwrite, *create_parent, *replication, *block_size)?,
        Op::Complete { path, last } => p.complete(path, *last)?,
        Op::Rename { src, dst } => p.rename(src, dst)?,
        Op::Rename2 { src, dst, overwrite } => p.rename2(src, dst, *overwrite)?,
        Op::Delete { path, recursive } => p.delete(path, *recursive)?,
        Op::SetPermission { path, permission } => p.set_permission(path, *permission)?,
        Op::SetOwner { path, owner, group } => p.set_owner(path, owner.as_deref(), group.as_deref())?,
        Op::SetReplication { path, replication } => p.set_replication(path, *replication)?,
        Op::SetTimes { path, mtime, atime } => p.set_times(path, *mtime, *atime)?,
        Op::SetQuota { path, namespace, space } => p.set_quota(path, *namespace, *space)?,
        Op::AddBlock { path, previous, .. } => p.add_block(path, *previous)?,
        Op::AbandonBlock { path, block } => p.abandon_block(path, *block)?,
        Op::UpdateBlockForPipeline { path, block } => p.update_block_for_pipeline(path, *block)?,
        Op::UpdatePipeline { path, old, new, .. } => p.update_pipeline(path, *old, *new)?,
        Op::RenewLease => p.renew_lease()?,
        Op::RecoverLease { path } => p.recover_lease(path)?,
        Op::Append { path } => p.append(path)?,
        Op::CommitBlockSynchronization {
            path_inode,
            block,
            new_gen_stamp,
            new_length,
            ..
        } => p.commit_block_sync(*path_inode, *block, *new_gen_stamp, *new_length)?,
        Op::SetDatanodeAdmin { node, decommission } => p.set_datanode_admin(node, *decommission)?,
        Op::GetDelegationToken {
            renewer,
            max_lifetime_ms,
            renew_interval_ms,
        } => p.get_delegation_token(renewer, *max_lifetime_ms, *renew_interval_ms)?,
        Op::RenewDelegationToken {
            token,
            renew_interval_ms,
        } => p.renew_delegation_token(token, *renew_interval_ms)?,
        Op::CancelDelegationToken { token } => p.cancel_delegation_token(token)?,
        Op::AddDelegationKey { key } => p.add_delegation_key(key)?,
        Op::ExpireDelegationTokens { sequence_numbers } => p.expire_delegation_tokens(sequence_numbers)?,
        Op::SetOwnership { version, prefixes } => p.set_ownership(*version, prefixes)?,
        Op::Concat { target, sources } => p.concat(target, sources)?,
        Op::Truncate { path, new_length } => p.truncate(path, *new_length)?,
        Op::GetFileInfo { .. }
        | Op::GetListing { .. }
        | Op::GetContentSummary { .. }
        | Op::GetBlockLocations { .. }
        | Op::GetAdditionalDatanode { .. } => {
            return Err(FsError::InvalidArgument(format!(
                "{} is a read, not a write",
                op.name()
            )))
        }
    };
    if let Some(next) = p.next_id {
        p.muts.push(Mutation::AdvanceInodeId(next));
    }
    if let Some(next) = p.next_block {
        p.muts.push(Mutation::AdvanceBlockId(next));
    }
    if let Some(next) = p.next_gen_stamp {
        p.muts.push(Mutation::AdvanceGenStamp(next));
    }
    Ok(Delta {
        mutations: p.muts,
        result,
    })
}

fn not_found(path: &FsPath) -> FsError {
    FsError::FileNotFound(format!("File does not exist: {}", path.text))
}

impl<'a, V: ReadView + ?Sized> Planner<'a, V> {
    /// A new inode id. Plans allocate only once every check passed: on the
    /// leader an id handed out is gone even if the plan then failed.
    fn alloc_id(&mut self) -> Result<InodeId, FsError> {
        let id = match (self.leader, self.next_id) {
            (Some(env), _) => env.ids.inode_id(),
            (None, Some(n)) => n,
            (None, None) => next_inode_id(self.view)?,
        };
        self.next_id = Some(self.next_id.map_or(id + 1, |n| n.max(id + 1)));
        Ok(id)
    }

    /// Quota usage of `dir` (which has a quota) as this plan must count it.
    fn usage_of(&self, dir: &Inode, q: &crate::inode::Quota) -> (u64, u64) {
        self.leader
            .and_then(|env| env.usage.usage(dir.id))
            .unwrap_or((q.ns_used, q.ds_used))
    }

    pub(crate) fn resolve(&self, raw: &str) -> Result<Resolved, FsError> {
        let path = FsPath::parse(raw)?;
        let r = resolve(self.view, path)?;
        self.caller.check_traverse(&r)?;
        Ok(r)
    }

    /// Resolve and require the target to exist.
    pub(crate) fn resolve_existing(&self, raw: &str) -> Result<(Resolved, Inode), FsError> {
        let r = self.resolve(raw)?;
        let t = r.target().cloned().ok_or_else(|| not_found(&r.path))?;
        Ok((r, t))
    }

    /// Check quotas of `r.inodes[..upto]` for adding `ns` names and `ds` bytes.
    pub(crate) fn check_quota(
        &self,
        r: &Resolved,
        upto: usize,
        ns: i64,
        ds: i64,
        skip: &[InodeId],
    ) -> Result<(), FsError> {
        for (i, inode) in r.inodes[..upto].iter().enumerate() {
            let Some(q) = inode.quota() else { continue };
            if skip.contains(&inode.id) {
                continue;
            }
            let (ns_used, ds_used) = self.usage_of(inode, q);
            if let Some(limit) = q.ns_quota {
                let after = ns_used as i64 + ns;
                if ns > 0 && after > limit as i64 {
                    return Err(FsError::NSQuotaExceeded(format!(
                        "The NameSpace quota (directories and files) of directory {} is exceeded: quota={limit} file count={after}",
                        r.text_at(i)
                    )));
                }
            }
            if let Some(limit) = q.ds_quota {
                let after = ds_used as i64 + ds;
                if ds > 0 && after > limit as i64 {
                    return Err(FsError::DSQuotaExceeded(format!(
                        "The DiskSpace quota of {} is exceeded: quota = {limit} B but diskspace consumed = {after} B",
                        r.text_at(i)
                    )));
                }
            }
        }
        Ok(())
    }

    /// Charge `ns`/`ds` to every directory with a quota in `r.inodes[..upto]`.
    pub(crate) fn charge(&mut self, r: &Resolved, upto: usize, ns: i64, ds: i64, skip: &[InodeId]) {
        if ns == 0 && ds == 0 {
            return;
        }
        for inode in &r.inodes[..upto] {
            if inode.quota().is_some() && !skip.contains(&inode.id) {
                self.muts.push(Mutation::AddUsage { id: inode.id, ns, ds });
            }
        }
    }

    fn check_dir_items(&self, r: &Resolved, i: usize) -> Result<(), FsError> {
        let dir = &r.inodes[i];
        if let Some(env) = self.leader {
            // Writes in flight below this directory may each add a child the
            // count does not show yet; near the limit, only a count read
            // with no write in flight is exact.
            let near = dir.children() as usize + MAX_LEADER_WRITES_IN_FLIGHT >= MAX_DIRECTORY_ITEMS as usize;
            if near && !(env.exclusive)(dir.id) {
                env.escalate.set(Some(dir.id));
                return Err(FsError::Unavailable(format!(
                    "directory {} is near its item limit: planning again under its write lock",
                    r.text_at(i)
                )));
            }
        }
        if dir.children() >= MAX_DIRECTORY_ITEMS {
            return Err(FsError::NSQuotaExceeded(format!(
                "The directory item limit of {} is exceeded: limit={MAX_DIRECTORY_ITEMS} items={}",
                r.text_at(i),
                dir.children()
            )));
        }
        Ok(())
    }

    /// Check `access` on `r.inodes[i]`; its path text is built only for a denial.
    pub(crate) fn check_at(&self, r: &Resolved, i: usize, access: u16) -> Result<(), FsError> {
        let inode = &r.inodes[i];
        if self.caller.allowed(inode, access) {
            Ok(())
        } else {
            Err(self.caller.denied(inode, access, &r.text_at(i)))
        }
    }

    /// Create the first `count` missing directories of `r`; the last one gets
    /// `last_perm`, the others `last_perm` plus u+wx (HDFS `addImplicitUwx`).
    /// Returns the id of the deepest directory created (or the last existing
    /// one when `count` is 0).
    fn create_dirs(
        &mut self,
        r: &Resolved,
        count: usize,
        last_perm: Permission,
        uwx_all: bool,
    ) -> Result<InodeId, FsError> {
        let parent = r.last_existing().clone();
        let first = r.inodes.len() - 1;
        let mut cur = parent.id;
        for k in 0..count {
            let name = r.path.components[first + k].to_string();
            let id = self.alloc_id()?;
            let is_last = k + 1 == count;
            let perm = if is_last && !uwx_all {
                last_perm
            } else {
                Permission::new(last_perm.bits() | 0o300)
            };
            let mut inode = Inode::new_dir(id, cur, perm, self.caller.user, &parent.group, self.time);
            if !is_last {
                inode.kind = InodeKind::Directory {
                    children: 1,
                    quota: None,
                };
            }
            self.muts.push(Mutation::CreateInode(inode));
            self.muts.push(Mutation::Link {
                parent: cur,
                name,
                child: id,
            });
            if k == 0 {
                self.muts.push(Mutation::TouchDir {
                    id: parent.id,
                    mtime: self.time,
                    children: 1,
                });
            }
            cur = id;
        }
        Ok(cur)
    }

    fn mkdirs(&mut self, raw: &str, perm: Permission, create_parent: bool) -> Result<OpResult, FsError> {
        let r = self.resolve(raw)?;
        if r.through_file {
            return Err(FsError::ParentNotDirectory(format!(
                "Parent path is not a directory: {}",
                r.text_at(r.inodes.len() - 1)
            )));
        }
        if let Some(t) = r.target() {
            return if t.is_dir() {
                Ok(OpResult::Bool(true))
            } else {
                Err(FsError::FileAlreadyExists(format!(
                    "Path is not a directory: {}",
                    r.path.text
                )))
            };
        }
        let missing = r.missing();
        if !create_parent && missing > 1 {
            return Err(FsError::FileNotFound(format!(
                "Parent directory doesn't exist: {}",
                r.path.prefix_text(r.path.components.len() - 1)
            )));
        }
        let pidx = r.inodes.len() - 1;
        self.check_at(&r, pidx, WRITE)?;
        self.check_dir_items(&r, pidx)?;
        self.check_quota(&r, r.inodes.len(), missing as i64, 0, &[])?;
        self.create_dirs(&r, missing, perm, false)?;
        self.charge(&r, r.inodes.len(), missing as i64, 0, &[]);
        Ok(OpResult::Bool(true))
    }

    fn create(
        &mut self,
        raw: &str,
        perm: Permission,
        overwrite: bool,
        create_parent: bool,
        replication: u16,
        block_size: u64,
    ) -> Result<OpResult, FsError> {
        if replication == 0 || replication > MAX_REPLICATION {
            return Err(FsError::InvalidArgument(format!(
                "Requested replication factor of {replication} is outside the allowed range 1..{MAX_REPLICATION} for {raw}"
            )));
        }
        if block_size < MIN_BLOCK_SIZE_BYTES {
            return Err(FsError::InvalidArgument(format!(
                "Specified block size is less than configured minimum value (dfs.namenode.fs-limits.min-block-size): {block_size} < {MIN_BLOCK_SIZE_BYTES}"
            )));
        }
        if block_size > MAX_BLOCK_SIZE_BYTES || !block_size.is_multiple_of(BYTES_PER_CHECKSUM) {
            return Err(FsError::InvalidArgument(format!(
                "Invalid block size {block_size}: must be a multiple of {BYTES_PER_CHECKSUM} (io.bytes.per.checksum) and at most {MAX_BLOCK_SIZE_BYTES}"
            )));
        }
        let r = self.resolve(raw)?;
        if r.path.is_root() || (r.path.components.is_empty() && r.exists()) {
            return Err(FsError::FileAlreadyExists(format!(
                "{} already exists as a directory",
                r.path.text
            )));
        }
        if r.through_file {
            return Err(FsError::ParentNotDirectory(format!(
                "Parent path is not a directory: {}",
                r.text_at(r.inodes.len() - 1)
            )));
        }
        let mut replaced = None;
        if let Some(t) = r.target() {
            if t.is_dir() {
                return Err(FsError::FileAlreadyExists(format!(
                    "{} already exists as a directory",
                    r.path.text
                )));
            }
            if let Some(holder) = t.lease_holder() {
                if holder != self.ctx.client_id {
                    self.check_lease_conflict(&r.path.text, holder, "CREATE_FILE")?;
                }
            }
            if !overwrite {
                return Err(FsError::FileAlreadyExists(format!("{} already exists", r.path.text)));
            }
            replaced = Some(t.clone());
        }
        let missing = r.missing();
        if missing > 1 && !create_parent {
            return Err(FsError::FileNotFound(format!(
                "Parent directory doesn't exist: {}",
                r.path.prefix_text(r.path.components.len() - 1)
            )));
        }
        // The directory the new name is linked into (the last existing one).
        let anchor_idx = if replaced.is_some() {
            r.inodes.len() - 2
        } else {
            r.inodes.len() - 1
        };
        let anchor = r.inodes[anchor_idx].clone();
        self.check_at(&r, anchor_idx, WRITE)?;
        if let Some(old) = &replaced {
            self.caller.check_sticky(&anchor, old, &r.path.text)?;
        } else {
            self.check_dir_items(&r, anchor_idx)?;
        }
        let ns = missing as i64;
        let ds = -(replaced.as_ref().map(Inode::space_consumed).unwrap_or(0) as i64);
        self.check_quota(&r, anchor_idx + 1, ns, ds, &[])?;

        let name = r.path.name().expect("non-root path has a name").to_string();
        let parent_id = if missing > 1 {
            self.create_dirs(&r, missing - 1, perm, true)?
        } else {
            anchor.id
        };
        if let Some(old) = &replaced {
            self.muts.push(Mutation::Unlink {
                parent: anchor.id,
                name: name.clone(),
                child: old.id,
            });
            self.muts.push(Mutation::DeleteInode(old.id));
        }
        let id = self.alloc_id()?;
        let inode = Inode {
            id,
            parent: parent_id,
            kind: InodeKind::File {
                replication,
                block_size,
                length: 0,
                lease_holder: Some(self.ctx.client_id.clone()),
                blocks: Vec::new(),
            },
            permission: perm,
            owner: self.caller.user.into(),
            group: anchor.group.clone(),
            mtime: self.time,
            atime: self.time,
        };
        let status = inode.status("");
        self.muts.push(Mutation::CreateInode(inode));
        self.muts.push(Mutation::Link {
            parent: parent_id,
            name,
            child: id,
        });
        // The directory the file lands in gains a child (unless the file
        // replaces one); a freshly created chain already counted itself into
        // the anchor.
        let children = if replaced.is_some() { 0 } else { 1 };
        self.muts.push(Mutation::TouchDir {
            id: parent_id,
            mtime: self.time,
            children,
        });
        self.charge(&r, anchor_idx + 1, ns, ds, &[]);
        Ok(OpResult::Status(Some(status)))
    }

    /// Visit every entry under `dir` (its children, theirs, and so on) as
    /// (parent, name, child); with `check_all`, require ALL on `dir` and
    /// every non-empty directory under it first (HDFS's subAccess check of
    /// a recursive delete).
    fn walk_subtree(
        view: &V,
        caller: &Caller<'_>,
        dir: &Inode,
        path: &str,
        check_all: bool,
        mut visit: impl FnMut(InodeId, &str, &Inode),
    ) -> Result<(), FsError> {
        let mut stack = vec![(dir.clone(), path.to_string())];
        while let Some((d, dpath)) = stack.pop() {
            if check_all {
                caller.check(&d, ALL, &dpath)?;
            }
            super::read::for_each_child(view, d.id, |name, child| {
                visit(d.id, name, &child);
                if child.is_dir() && child.children() > 0 {
                    let cpath = format!("{}/{name}", dpath.trim_end_matches('/'));
                    stack.push((child, cpath));
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Push unlink/delete mutations for every descendant of `dir`; with
    /// `check_all`, require ALL on every directory. Returns (names removed,
    /// bytes of space removed) excluding `dir` itself.
    fn remove_subtree(&mut self, dir: &Inode, path: &str, check_all: bool) -> Result<(u64, u64), FsError> {
        let (view, caller, muts) = (self.view, &self.caller, &mut self.muts);
        let (mut ns, mut ds) = (0u64, 0u64);
        Self::walk_subtree(view, caller, dir, path, check_all, |parent, name, child| {
            ns += 1;
            ds += child.space_consumed();
            muts.push(Mutation::Unlink {
                parent,
                name: name.to_string(),
                child: child.id,
            });
            muts.push(Mutation::DeleteInode(child.id));
        })?;
        Ok((ns, ds))
    }

    fn delete(&mut self, raw: &str, recursive: bool) -> Result<OpResult, FsError> {
        let r = self.resolve(raw)?;
        if r.path.components.is_empty() {
            return Ok(OpResult::Bool(false)); // the root (or a bare /.reserved/.inodes/<id>)
        }
        let Some(t) = r.target().cloned() else {
            return Ok(OpResult::Bool(false));
        };
        let pidx = r.inodes.len() - 2;
        let parent = r.inodes[pidx].clone();
        if t.is_dir() && t.children() > 0 && !recursive {
            return Err(FsError::PathIsNotEmptyDirectory(format!(
                "`{} is non empty': Directory is not empty",
                r.path.text
            )));
        }
        self.check_at(&r, pidx, WRITE)?;
        self.caller.check_sticky(&parent, &t, &r.path.text)?;
        let name = r.path.name().expect("has a name").to_string();
        if self.leader.is_some() && t.is_dir() && t.children() > 0 {
            return self.detach(&r, pidx, &parent, &t, &name);
        }
        self.muts.push(Mutation::Unlink {
            parent: parent.id,
            name,
            child: t.id,
        });
        self.muts.push(Mutation::DeleteInode(t.id));
        let (mut ns, mut ds) = (1u64, t.space_consumed());
        if t.is_dir() && t.children() > 0 {
            let (n, d) = self.remove_subtree(&t, &r.path.text, !self.caller.superuser)?;
            ns += n;
            ds += d;
        }
        self.muts.push(Mutation::TouchDir {
            id: parent.id,
            mtime: self.time,
            children: -1,
        });
        self.charge(&r, pidx + 1, -(ns as i64), -(ds as i64), &[]);
        Ok(OpResult::Bool(true))
    }

    /// A recursive delete of non-empty directory `t` on the leader: one
    /// small delta detaches it (`namespace::reclaim`); the leader reclaims
    /// what is under it afterwards, in bounded entries. The subtree is
    /// walked only to check a non-superuser's access to all of it (as
    /// HDFS does) and to count it when an ancestor has a quota.
    fn detach(
        &mut self,
        r: &Resolved,
        pidx: usize,
        parent: &Inode,
        t: &Inode,
        name: &str,
    ) -> Result<OpResult, FsError> {
        if !self.caller.superuser {
            self.check_subtree(t, &r.path.text)?;
        }
        let (ns, ds) = if r.inodes[..=pidx].iter().any(|i| i.quota().is_some()) {
            super::read::count_subtree(self.view, t)?
        } else {
            (0, 0)
        };
        self.muts
            .extend(super::reclaim::detach_mutations(self.view, parent.id, name, t)?);
        self.muts.push(Mutation::TouchDir {
            id: parent.id,
            mtime: self.time,
            children: -1,
        });
        self.charge(r, pidx + 1, -(ns as i64), -(ds as i64), &[]);
        Ok(OpResult::Bool(true))
    }

    /// Require ALL on every directory of the subtree under `dir` (HDFS's
    /// subAccess check of a recursive delete).
    fn check_subtree(&self, dir: &Inode, path: &str) -> Result<(), FsError> {
        Self::walk_subtree(self.view, &self.caller, dir, path, true, |_, _, _| {})
    }
}

/// A user or group name given by a caller.
pub fn check_principal(name: &str) -> Result<(), FsError> {
    if name.is_empty()
        || name.len() > MAX_PRINCIPAL_LEN_BYTES
        || name.chars().any(|c| c.is_control() || c == ':' || c == '/')
    {
        return Err(FsError::InvalidArgument(format!(
            "invalid user or group name {name:?}: must be 1..{MAX_PRINCIPAL_LEN_BYTES} bytes without ':', '/' or control characters"
        )));
    }
    Ok(())
}
