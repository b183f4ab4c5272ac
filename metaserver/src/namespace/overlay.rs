//! A [`ReadView`] over committed state plus pending writes.
//!
//! Applying a Raft batch plans op *k* against the effects of ops *0..k* in
//! the same batch; the overlay makes those effects visible before they are
//! committed, and turns the batch into one [`WriteBatch`]. [`Overlay::stage`]
//! applies one delta all-or-nothing: a guard that fails rolls back the
//! delta's earlier mutations.

use raftfs_proto::FsError;

use super::delta::{Attr, Mutation};
use crate::inode::{Inode, InodeId, InodeKind, Quota};
use crate::store::{ReadView, RetryKey, RetryRecord, RetryWrite, StoreError, WriteBatch};

/// Meta key of the next inode id counter (u64 little-endian).
pub const META_NEXT_INODE_ID: &str = "next_inode_id";

enum Undo {
    Inode(InodeId, Option<Option<Inode>>),
    Dentry((InodeId, String), Option<Option<InodeId>>),
    Meta(String, Option<Option<Vec<u8>>>),
}

pub struct Overlay<'a, V: ReadView + ?Sized> {
    base: &'a V,
    batch: WriteBatch,
}

fn guard(msg: String) -> FsError {
    // A failed guard means the delta was planned against state that changed
    // since: the caller may re-plan. Every replica fails it identically.
    FsError::Unavailable(format!("conflicting concurrent change: {msg}"))
}

impl<'a, V: ReadView + ?Sized> Overlay<'a, V> {
    pub fn new(base: &'a V) -> Self {
        Overlay {
            base,
            batch: WriteBatch::default(),
        }
    }

    pub fn into_batch(self) -> WriteBatch {
        self.batch
    }

    pub fn batch_mut(&mut self) -> &mut WriteBatch {
        &mut self.batch
    }

    pub fn put_retry(&mut self, key: RetryKey, record: RetryRecord) {
        self.batch.retry.insert(key, RetryWrite::Put(record));
    }

    pub fn delete_retry(&mut self, key: RetryKey, time_ms: i64) {
        self.batch.retry.insert(key, RetryWrite::Delete { time_ms });
    }

    pub fn put_meta(&mut self, key: &str, value: Vec<u8>) {
        self.batch.meta.insert(key.to_string(), Some(value));
    }

    fn set_inode(&mut self, undo: &mut Vec<Undo>, id: InodeId, v: Option<Inode>) {
        let prev = self.batch.inodes.insert(id, v);
        undo.push(Undo::Inode(id, prev));
    }

    fn set_dentry(&mut self, undo: &mut Vec<Undo>, key: (InodeId, String), v: Option<InodeId>) {
        let prev = self.batch.dentries.insert(key.clone(), v);
        undo.push(Undo::Dentry(key, prev));
    }

    fn rollback(&mut self, undo: Vec<Undo>) {
        for u in undo.into_iter().rev() {
            match u {
                Undo::Inode(id, None) => {
                    self.batch.inodes.remove(&id);
                }
                Undo::Inode(id, Some(v)) => {
                    self.batch.inodes.insert(id, v);
                }
                Undo::Dentry(k, None) => {
                    self.batch.dentries.remove(&k);
                }
                Undo::Dentry(k, Some(v)) => {
                    self.batch.dentries.insert(k, v);
                }
                Undo::Meta(k, None) => {
                    self.batch.meta.remove(&k);
                }
                Undo::Meta(k, Some(v)) => {
                    self.batch.meta.insert(k, v);
                }
            }
        }
    }

    /// Apply `mutations` in order, all or nothing.
    pub fn stage(&mut self, mutations: &[Mutation]) -> Result<(), FsError> {
        let mut undo = Vec::new();
        for m in mutations {
            if let Err(e) = self.stage_one(m, &mut undo) {
                self.rollback(undo);
                return Err(e);
            }
        }
        Ok(())
    }

    fn existing(&self, id: InodeId) -> Result<Inode, FsError> {
        self.inode(id)?
            .ok_or_else(|| guard(format!("inode {id} no longer exists")))
    }

    fn stage_one(&mut self, m: &Mutation, undo: &mut Vec<Undo>) -> Result<(), FsError> {
        match m {
            Mutation::CreateInode(inode) => {
                if self.inode(inode.id)?.is_some() {
                    return Err(guard(format!("inode id {} already in use", inode.id)));
                }
                self.set_inode(undo, inode.id, Some(inode.clone()));
            }
            Mutation::DeleteInode(id) => {
                self.existing(*id)?;
                self.set_inode(undo, *id, None);
            }
            Mutation::Link { parent, name, child } => {
                if !self.existing(*parent)?.is_dir() {
                    return Err(guard(format!("inode {parent} is not a directory")));
                }
                if self.child(*parent, name)?.is_some() {
                    return Err(guard(format!("{parent}/{name} appeared")));
                }
                self.set_dentry(undo, (*parent, name.clone()), Some(*child));
            }
            Mutation::Unlink { parent, name, child } => {
                if self.child(*parent, name)? != Some(*child) {
                    return Err(guard(format!("{parent}/{name} no longer points at {child}")));
                }
                self.set_dentry(undo, (*parent, name.clone()), None);
            }
            Mutation::SetAttr { id, attr } => {
                let mut inode = self.existing(*id)?;
                apply_attr(&mut inode, attr).map_err(guard)?;
                self.set_inode(undo, *id, Some(inode));
            }
            Mutation::TouchDir { id, mtime, children } => {
                let mut inode = self.existing(*id)?;
                inode.mtime = inode.mtime.max(*mtime);
                match &mut inode.kind {
                    InodeKind::Directory { children: c, .. } => {
                        let n = (*c as i64) + children;
                        assert!(n >= 0, "child count of inode {id} would become {n}");
                        *c = n as u64;
                    }
                    InodeKind::File { .. } => return Err(guard(format!("inode {id} is not a directory"))),
                }
                self.set_inode(undo, *id, Some(inode));
            }
            Mutation::AddUsage { id, ns, ds } => {
                let mut inode = self.existing(*id)?;
                if let InodeKind::Directory { quota: Some(q), .. } = &mut inode.kind {
                    q.ns_used = (q.ns_used as i64 + ns).max(0) as u64;
                    q.ds_used = (q.ds_used as i64 + ds).max(0) as u64;
                    self.set_inode(undo, *id, Some(inode));
                }
                // A quota removed since planning: nothing to account.
            }
            Mutation::AdvanceInodeId(next) => {
                let cur = super::next_inode_id(self)?;
                if *next > cur {
                    let prev = self
                        .batch
                        .meta
                        .insert(META_NEXT_INODE_ID.into(), Some(next.to_le_bytes().to_vec()));
                    undo.push(Undo::Meta(META_NEXT_INODE_ID.into(), prev));
                }
            }
        }
        Ok(())
    }
}

fn apply_attr(inode: &mut Inode, attr: &Attr) -> Result<(), String> {
    match attr {
        Attr::Permission(p) => inode.permission = *p,
        Attr::Owner { owner, group } => {
            if let Some(o) = owner {
                inode.owner = o.as_str().into();
            }
            if let Some(g) = group {
                inode.group = g.as_str().into();
            }
        }
        Attr::Replication(r) => match &mut inode.kind {
            InodeKind::File { replication, .. } => *replication = *r,
            InodeKind::Directory { .. } => return Err(format!("inode {} is a directory", inode.id)),
        },
        Attr::Times { mtime, atime } => {
            if let Some(m) = mtime {
                inode.mtime = *m;
            }
            if let Some(a) = atime {
                inode.atime = *a;
            }
        }
        Attr::Quota {
            ns_quota,
            ds_quota,
            ns_used,
            ds_used,
        } => match &mut inode.kind {
            InodeKind::Directory { quota, .. } => {
                *quota = if ns_quota.is_none() && ds_quota.is_none() {
                    None
                } else {
                    Some(Box::new(Quota {
                        ns_quota: *ns_quota,
                        ds_quota: *ds_quota,
                        ns_used: *ns_used,
                        ds_used: *ds_used,
                    }))
                }
            }
            InodeKind::File { .. } => return Err(format!("inode {} is a file", inode.id)),
        },
        Attr::Close { mtime } => match &mut inode.kind {
            InodeKind::File { lease_holder, .. } => {
                *lease_holder = None;
                inode.mtime = *mtime;
            }
            InodeKind::Directory { .. } => return Err(format!("inode {} is a directory", inode.id)),
        },
    }
    Ok(())
}

impl<V: ReadView + ?Sized> ReadView for Overlay<'_, V> {
    fn inode(&self, id: InodeId) -> Result<Option<Inode>, StoreError> {
        match self.batch.inodes.get(&id) {
            Some(v) => Ok(v.clone()),
            None => self.base.inode(id),
        }
    }

    fn child(&self, parent: InodeId, name: &str) -> Result<Option<InodeId>, StoreError> {
        match self.batch.dentries.get(&(parent, name.to_string())) {
            Some(v) => Ok(*v),
            None => self.base.child(parent, name),
        }
    }

    fn children(&self, parent: InodeId, start_after: &str, limit: usize) -> Result<Vec<(String, InodeId)>, StoreError> {
        use std::ops::Bound;
        let lo = (parent, start_after.to_string());
        let hi = (parent + 1, String::new());
        let lower = if start_after.is_empty() {
            Bound::Included(lo)
        } else {
            Bound::Excluded(lo)
        };
        let pending: Vec<(&String, Option<InodeId>)> = self
            .batch
            .dentries
            .range((lower, Bound::Excluded(hi)))
            .map(|((_, n), c)| (n, *c))
            .collect();
        if pending.is_empty() {
            return self.base.children(parent, start_after, limit);
        }
        let deletes = pending.iter().filter(|(_, c)| c.is_none()).count();
        let base = self.base.children(parent, start_after, limit + deletes)?;
        // If the base page was cut short, names after its last one are unknown:
        // a pending name beyond it must wait for a later page.
        let cutoff = if base.len() == limit + deletes {
            base.last().map(|(n, _)| n.clone())
        } else {
            None
        };
        let mut merged: std::collections::BTreeMap<String, InodeId> = base.into_iter().collect();
        for (n, c) in pending {
            if cutoff.as_ref().is_some_and(|cut| n > cut) {
                continue;
            }
            match c {
                Some(c) => merged.insert(n.clone(), c),
                None => merged.remove(n),
            };
        }
        Ok(merged.into_iter().take(limit).collect())
    }

    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match self.batch.meta.get(key) {
            Some(v) => Ok(v.clone()),
            None => self.base.meta(key),
        }
    }

    fn retry(&self, key: &RetryKey) -> Result<Option<RetryRecord>, StoreError> {
        match self.batch.retry.get(key) {
            Some(RetryWrite::Put(r)) => Ok(Some(r.clone())),
            Some(RetryWrite::Delete { .. }) => Ok(None),
            None => self.base.retry(key),
        }
    }

    fn retry_older_than(&self, before_ms: i64, limit: usize) -> Result<Vec<(i64, RetryKey)>, StoreError> {
        // The base does not know this batch's deletes: ask it for enough to
        // make up for them, then merge the batch in, so the answer is the one
        // the committed store would give.
        let deletes = self
            .batch
            .retry
            .values()
            .filter(|w| matches!(w, RetryWrite::Delete { .. }))
            .count();
        let mut out: Vec<(i64, RetryKey)> = self
            .base
            .retry_older_than(before_ms, limit + deletes)?
            .into_iter()
            .filter(|(_, k)| !self.batch.retry.contains_key(k))
            .collect();
        for (k, w) in &self.batch.retry {
            if let RetryWrite::Put(r) = w {
                if r.time_ms < before_ms {
                    out.push((r.time_ms, k.clone()));
                }
            }
        }
        out.sort();
        out.truncate(limit);
        Ok(out)
    }
}
