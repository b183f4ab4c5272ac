//! A [`ReadView`] over committed state plus pending writes.
//!
//! Applying a Raft batch plans op *k* against the effects of ops *0..k* in
//! the same batch; the overlay makes those effects visible before they are
//! committed, and turns the batch into one [`WriteBatch`]. [`Overlay::stage`]
//! applies one delta all-or-nothing: a guard that fails rolls back the
//! delta's earlier mutations.
//!
//! Derived tables: whenever a file inode is written or deleted, the overlay
//! writes the rows of the `block` table (one per block: file, stamp, length,
//! replication, under construction) and of the lease tables (which files a
//! holder has open, and its lease record with a count of them) that follow
//! from the change. Plans never write those rows themselves, so they cannot
//! disagree with the inodes.

use raftfs_proto::FsError;

use super::delegation;
use super::delta::{Attr, Mutation};
use crate::inode::{Inode, InodeId, InodeKind, Quota};
use crate::store::{
    BlockId, BlockRecord, LeaseRecord, ReadView, RetryKey, RetryRecord, RetryWrite, StoreError, WriteBatch,
};

/// Meta key of the next inode id counter (u64 little-endian).
pub const META_NEXT_INODE_ID: &str = "next_inode_id";
/// Meta key of the next block id counter (u64 little-endian).
pub const META_NEXT_BLOCK_ID: &str = "next_block_id";
/// Meta key of the next generation stamp (u64 little-endian).
pub const META_NEXT_GEN_STAMP: &str = "next_gen_stamp";
/// The first block id (HDFS: sequential block ids start after 2^30).
pub const FIRST_BLOCK_ID: u64 = (1 << 30) + 1;
/// The first generation stamp (HDFS `GenerationStamp.LAST_RESERVED_STAMP` + 1).
pub const FIRST_GEN_STAMP: u64 = 1001;

enum Undo {
    Inode(InodeId, Option<Option<Inode>>),
    Dentry((InodeId, String), Option<Option<InodeId>>),
    Meta(String, Option<Option<Vec<u8>>>),
    Block(BlockId, Option<Option<BlockRecord>>),
    Lease(String, Option<Option<LeaseRecord>>),
    LeaseFile((String, InodeId), Option<bool>),
}

pub struct Overlay<'a, V: ReadView + ?Sized> {
    base: &'a V,
    batch: WriteBatch,
    /// Log time of the delta being staged (leases taken or renewed).
    time_ms: i64,
    /// Keys this batch deleted from the retry table (an upper bound of the
    /// base records it hides), and a lower bound of its retry puts' times:
    /// [`ReadView::retry_older_than`], run once per log entry, then need not
    /// walk every retry write staged (it was quadratic in a long batch).
    retry_shadowed: usize,
    min_retry_put_ms: i64,
}

/// A row's bincode (rows are plain data: encoding cannot fail).
fn encode_row<T: serde::Serialize>(v: &T) -> Vec<u8> {
    bincode::serialize(v).expect("a plain-data row encodes")
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
            time_ms: 0,
            retry_shadowed: 0,
            min_retry_put_ms: i64::MAX,
        }
    }

    pub fn into_batch(self) -> WriteBatch {
        self.batch
    }

    pub fn batch_mut(&mut self) -> &mut WriteBatch {
        &mut self.batch
    }

    /// Put call `key`'s record; whether the key had one already (committed
    /// or staged), which the caller's record count needs.
    pub fn put_retry(&mut self, key: RetryKey, record: RetryRecord) -> Result<bool, StoreError> {
        self.min_retry_put_ms = self.min_retry_put_ms.min(record.time_ms);
        let (existed, replaces) = match self.batch.retry.get(&key) {
            Some(RetryWrite::Put { replaces, .. }) => (true, *replaces),
            // The committed record went in this batch; its time-index row
            // must still go when the put takes the delete's place.
            Some(RetryWrite::Delete { time_ms }) => (false, Some(*time_ms)),
            None => {
                let base = self.base.retry(&key)?.map(|r| r.time_ms);
                if base.is_some() {
                    self.retry_shadowed += 1;
                }
                (base.is_some(), base)
            }
        };
        self.batch.retry.insert(key, RetryWrite::Put { record, replaces });
        Ok(existed)
    }

    /// Delete call `key`'s record, which was applied at `time_ms`.
    pub fn delete_retry(&mut self, key: RetryKey, time_ms: i64) {
        // A record put in this batch over a committed one: the committed
        // one is what the store holds and must drop.
        let time_ms = match self.batch.retry.get(&key) {
            Some(RetryWrite::Put {
                replaces: Some(old), ..
            }) => *old,
            _ => time_ms,
        };
        if !matches!(
            self.batch.retry.insert(key, RetryWrite::Delete { time_ms }),
            Some(RetryWrite::Delete { .. } | RetryWrite::Put { replaces: Some(_), .. })
        ) {
            self.retry_shadowed += 1;
        }
    }

    pub fn put_meta(&mut self, key: &str, value: Vec<u8>) {
        self.batch.meta.insert(key.to_string(), Some(value));
    }

    /// Write inode `id` (or delete it) that was `old`, with the derived
    /// block and lease rows of a file.
    fn set_inode(
        &mut self,
        undo: &mut Vec<Undo>,
        id: InodeId,
        old: Option<&Inode>,
        v: Option<Inode>,
    ) -> Result<(), FsError> {
        let is_file = |i: Option<&Inode>| i.is_some_and(|i| !i.is_dir());
        if is_file(old) || is_file(v.as_ref()) {
            self.derive_rows(undo, id, old, v.as_ref())?;
        }
        self.put_inode(undo, id, v);
        Ok(())
    }

    /// Write inode `id` where no derived row can change (a directory, or a
    /// file attribute the block and lease tables do not hold).
    fn put_inode(&mut self, undo: &mut Vec<Undo>, id: InodeId, v: Option<Inode>) {
        let prev = self.batch.inodes.insert(id, v);
        undo.push(Undo::Inode(id, prev));
    }

    fn set_block(&mut self, undo: &mut Vec<Undo>, id: BlockId, v: Option<BlockRecord>) {
        let prev = self.batch.blocks.insert(id, v);
        undo.push(Undo::Block(id, prev));
    }

    fn set_lease(&mut self, undo: &mut Vec<Undo>, holder: &str, v: Option<LeaseRecord>) {
        let prev = self.batch.leases.insert(holder.to_string(), v);
        undo.push(Undo::Lease(holder.to_string(), prev));
    }

    fn set_lease_file(&mut self, undo: &mut Vec<Undo>, holder: &str, file: InodeId, held: bool) {
        let key = (holder.to_string(), file);
        let prev = self.batch.lease_files.insert(key.clone(), held);
        undo.push(Undo::LeaseFile(key, prev));
    }

    /// The block and lease rows that follow from file `id` changing from
    /// `old` to `new` (either may be absent, or a directory).
    fn derive_rows(
        &mut self,
        undo: &mut Vec<Undo>,
        id: InodeId,
        old: Option<&Inode>,
        new: Option<&Inode>,
    ) -> Result<(), FsError> {
        let rows = |i: Option<&Inode>| -> Vec<(BlockId, BlockRecord)> {
            let Some(i) = i else { return Vec::new() };
            let blocks = i.blocks();
            let uc = i.under_construction();
            blocks
                .iter()
                .enumerate()
                .map(|(k, b)| {
                    (
                        b.id,
                        BlockRecord {
                            inode: id,
                            gen_stamp: b.gen_stamp,
                            num_bytes: b.num_bytes,
                            replication: i.replication(),
                            under_construction: uc && k + 1 == blocks.len(),
                        },
                    )
                })
                .collect()
        };
        let (before, after) = (rows(old), rows(new));
        if before != after {
            for (b, _) in &before {
                if !after.iter().any(|(a, _)| a == b) {
                    self.set_block(undo, *b, None);
                }
            }
            for (b, r) in &after {
                if !before.iter().any(|(x, y)| x == b && y == r) {
                    self.set_block(undo, *b, Some(*r));
                }
            }
        }
        let holder = |i: Option<&Inode>| i.and_then(|i| i.lease_holder().map(str::to_string));
        let (h0, h1) = (holder(old), holder(new));
        if h0 != h1 {
            if let Some(h) = &h0 {
                self.set_lease_file(undo, h, id, false);
                let mut rec = self
                    .lease(h)?
                    .ok_or_else(|| FsError::Internal(format!("file {id} is held by {h}, which has no lease record")))?;
                rec.open_files -= 1;
                let v = (rec.open_files > 0).then_some(rec);
                self.set_lease(undo, h, v);
            }
            if let Some(h) = &h1 {
                self.set_lease_file(undo, h, id, true);
                let rec = match self.lease(h)? {
                    Some(r) => LeaseRecord {
                        renewed_ms: r.renewed_ms.max(self.time_ms),
                        open_files: r.open_files + 1,
                    },
                    None => LeaseRecord {
                        renewed_ms: self.time_ms,
                        open_files: 1,
                    },
                };
                self.set_lease(undo, h, Some(rec));
            }
        }
        Ok(())
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
                Undo::Block(k, None) => {
                    self.batch.blocks.remove(&k);
                }
                Undo::Block(k, Some(v)) => {
                    self.batch.blocks.insert(k, v);
                }
                Undo::Lease(k, None) => {
                    self.batch.leases.remove(&k);
                }
                Undo::Lease(k, Some(v)) => {
                    self.batch.leases.insert(k, v);
                }
                Undo::LeaseFile(k, None) => {
                    self.batch.lease_files.remove(&k);
                }
                Undo::LeaseFile(k, Some(v)) => {
                    self.batch.lease_files.insert(k, v);
                }
            }
        }
    }

    /// Apply `mutations` at log time `time_ms`, in order, all or nothing.
    pub fn stage(&mut self, mutations: &[Mutation], time_ms: i64) -> Result<(), FsError> {
        self.time_ms = time_ms;
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
                self.set_inode(undo, inode.id, None, Some(inode.clone()))?;
            }
            Mutation::DeleteInode(id) => {
                let old = self.existing(*id)?;
                self.set_inode(undo, *id, Some(&old), None)?;
            }
            Mutation::Link { parent, name, child } => {
                if !self.existing(*parent)?.is_dir() {
                    return Err(guard(format!("inode {parent} is not a directory")));
                }
                if self.child(*parent, name)?.is_some() {
                    return Err(guard(format!("{parent}/{name} appeared")));
                }
                self.set_dentry(undo, (*parent, name.clone()), Some(*child));
                // Keep the child's parent pointer in step (a rename moves
                // it; a create made it right already). No derived row changes.
                let created_here = matches!(self.batch.inodes.get(child), Some(Some(i)) if i.parent == *parent);
                if !created_here {
                    let mut inode = self.existing(*child)?;
                    if inode.parent != *parent {
                        inode.parent = *parent;
                        self.put_inode(undo, *child, Some(inode));
                    }
                }
            }
            Mutation::Unlink { parent, name, child } => {
                if self.child(*parent, name)? != Some(*child) {
                    return Err(guard(format!("{parent}/{name} no longer points at {child}")));
                }
                self.set_dentry(undo, (*parent, name.clone()), None);
            }
            Mutation::SetAttr { id, attr } => {
                let mut inode = self.existing(*id)?;
                if changes_derived_rows(attr) {
                    let old = inode.clone();
                    apply_attr(&mut inode, attr).map_err(guard)?;
                    self.set_inode(undo, *id, Some(&old), Some(inode))?;
                } else {
                    apply_attr(&mut inode, attr).map_err(guard)?;
                    self.put_inode(undo, *id, Some(inode));
                }
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
                self.put_inode(undo, *id, Some(inode));
            }
            Mutation::AddUsage { id, ns, ds } => {
                let mut inode = self.existing(*id)?;
                if let InodeKind::Directory { quota: Some(q), .. } = &mut inode.kind {
                    q.ns_used = (q.ns_used as i64 + ns).max(0) as u64;
                    q.ds_used = (q.ds_used as i64 + ds).max(0) as u64;
                    self.put_inode(undo, *id, Some(inode));
                }
                // A quota removed since planning: nothing to account.
            }
            Mutation::AdvanceInodeId(next) => self.advance(undo, META_NEXT_INODE_ID, *next)?,
            Mutation::AdvanceBlockId(next) => self.advance(undo, META_NEXT_BLOCK_ID, *next)?,
            Mutation::AdvanceGenStamp(next) => self.advance(undo, META_NEXT_GEN_STAMP, *next)?,
            Mutation::AddBlock { id, block } => {
                let old = self.existing(*id)?;
                let mut inode = old.clone();
                let InodeKind::File {
                    blocks,
                    length,
                    lease_holder: Some(_),
                    ..
                } = &mut inode.kind
                else {
                    return Err(guard(format!("inode {id} is not a file being written")));
                };
                blocks.push(*block);
                *length += block.num_bytes;
                self.set_inode(undo, *id, Some(&old), Some(inode))?;
            }
            Mutation::SetLastBlock { id, expect, block } => {
                let old = self.existing(*id)?;
                let mut inode = old.clone();
                let InodeKind::File { blocks, length, .. } = &mut inode.kind else {
                    return Err(guard(format!("inode {id} is not a file")));
                };
                match blocks.last_mut() {
                    Some(last) if last.id == *expect => {
                        *length = *length - last.num_bytes + block.num_bytes;
                        *last = *block;
                    }
                    _ => return Err(guard(format!("the last block of inode {id} is no longer {expect}"))),
                }
                self.set_inode(undo, *id, Some(&old), Some(inode))?;
            }
            Mutation::RemoveLastBlock { id, expect } => {
                let old = self.existing(*id)?;
                let mut inode = old.clone();
                let InodeKind::File { blocks, length, .. } = &mut inode.kind else {
                    return Err(guard(format!("inode {id} is not a file")));
                };
                match blocks.last() {
                    Some(last) if last.id == *expect => {
                        *length -= last.num_bytes;
                        blocks.pop();
                    }
                    _ => return Err(guard(format!("the last block of inode {id} is no longer {expect}"))),
                }
                self.set_inode(undo, *id, Some(&old), Some(inode))?;
            }
            Mutation::MoveBlocks { from, to, expect } => {
                let (old_from, old_to) = (self.existing(*from)?, self.existing(*to)?);
                let closed_file = |i: &Inode| !i.is_dir() && !i.under_construction();
                if !closed_file(&old_from) || !closed_file(&old_to) || from == to {
                    return Err(guard(format!("inodes {from} and {to} are no longer two closed files")));
                }
                if !old_from.blocks().iter().map(|b| b.id).eq(expect.iter().copied()) {
                    return Err(guard(format!("the blocks of inode {from} changed")));
                }
                let (mut new_from, mut new_to) = (old_from.clone(), old_to.clone());
                let InodeKind::File { blocks, length, .. } = &mut new_from.kind else {
                    unreachable!("checked to be a file")
                };
                let (moved, moved_bytes) = (std::mem::take(blocks), std::mem::take(length));
                let InodeKind::File { blocks, length, .. } = &mut new_to.kind else {
                    unreachable!("checked to be a file")
                };
                blocks.extend(moved);
                *length += moved_bytes;
                // `from`'s rows go first, so that the moved blocks' last
                // value in the batch is the row that names `to`.
                self.set_inode(undo, *from, Some(&old_from), Some(new_from))?;
                self.set_inode(undo, *to, Some(&old_to), Some(new_to))?;
            }
            Mutation::Decommission { node, on } => {
                let mut set = super::decommissioned(self)?;
                let changed = if *on {
                    set.insert(node.clone())
                } else {
                    set.remove(node)
                };
                if changed {
                    let v = bincode::serialize(&set).expect("serialize a set of names");
                    let prev = self.batch.meta.insert(super::META_DECOMMISSION.into(), Some(v));
                    undo.push(Undo::Meta(super::META_DECOMMISSION.into(), prev));
                }
            }
            Mutation::RenewLease { holder } => {
                if let Some(mut rec) = self.lease(holder)? {
                    rec.renewed_ms = rec.renewed_ms.max(self.time_ms);
                    self.set_lease(undo, holder, Some(rec));
                }
            }
            Mutation::PutDelegationToken(rec) => {
                let seq = rec.identifier.sequence_number;
                if delegation::token_record(self, seq)?.is_some() {
                    return Err(guard(format!("delegation token {seq} exists")));
                }
                let live = delegation::live_tokens(self)? + 1;
                self.put_meta_undo(undo, &delegation::token_key(seq), Some(encode_row(rec)));
                self.put_meta_undo(
                    undo,
                    delegation::META_DELEGATION_LIVE,
                    Some(live.to_le_bytes().to_vec()),
                );
            }
            Mutation::RenewDelegationToken {
                sequence_number,
                expiry_ms,
            } => {
                if let Some(mut rec) = delegation::token_record(self, *sequence_number)? {
                    if *expiry_ms > rec.expiry_ms {
                        rec.expiry_ms = *expiry_ms;
                        self.put_meta_undo(undo, &delegation::token_key(*sequence_number), Some(encode_row(&rec)));
                    }
                }
            }
            Mutation::DeleteDelegationToken { sequence_number } => {
                if delegation::token_record(self, *sequence_number)?.is_some() {
                    let live = delegation::live_tokens(self)?.saturating_sub(1);
                    self.put_meta_undo(undo, &delegation::token_key(*sequence_number), None);
                    self.put_meta_undo(
                        undo,
                        delegation::META_DELEGATION_LIVE,
                        Some(live.to_le_bytes().to_vec()),
                    );
                }
            }
            Mutation::SetDelegationKeys(keys) => {
                self.put_meta_undo(undo, delegation::META_DELEGATION_KEYS, Some(encode_row(keys)));
            }
            Mutation::SetOwnership(owned) => {
                // Pushes planned concurrently on a leader may land in
                // either order: the newer table's set wins.
                let current = super::ownership::ownership(self)?;
                if current.as_ref().is_none_or(|c| c.version <= owned.version) {
                    let row = super::ownership::Ownership {
                        changes: current.map_or(0, |c| c.changes) + 1,
                        ..owned.clone()
                    };
                    self.put_meta_undo(undo, super::ownership::META_OWNERSHIP, Some(encode_row(&row)));
                }
            }
            Mutation::OwnedAt { changes } => {
                let now = super::ownership::ownership(self)?.map_or(0, |c| c.changes);
                if now != *changes {
                    return Err(guard(format!(
                        "the paths this nameservice owns changed (change {now}, planned at {changes})"
                    )));
                }
            }
            Mutation::AdvanceDelegationSeq(next) => {
                if *next > delegation::next_sequence_number(self)? {
                    let v = next.to_le_bytes().to_vec();
                    self.put_meta_undo(undo, delegation::META_DELEGATION_NEXT_SEQ, Some(v));
                }
            }
        }
        Ok(())
    }

    /// Write (or with `None` delete) meta row `key`, remembering what it was.
    fn put_meta_undo(&mut self, undo: &mut Vec<Undo>, key: &str, value: Option<Vec<u8>>) {
        let prev = self.batch.meta.insert(key.to_string(), value);
        undo.push(Undo::Meta(key.to_string(), prev));
    }

    /// Raise the u64 counter under `key` to at least `next`.
    fn advance(&mut self, undo: &mut Vec<Undo>, key: &'static str, next: u64) -> Result<(), FsError> {
        let cur = super::read_counter(self, key)?;
        if next > cur {
            let prev = self.batch.meta.insert(key.into(), Some(next.to_le_bytes().to_vec()));
            undo.push(Undo::Meta(key.into(), prev));
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
        Attr::LeaseHolder(h) => match &mut inode.kind {
            InodeKind::File { lease_holder, .. } => *lease_holder = Some(h.clone()),
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
            Some(RetryWrite::Put { record, .. }) => Ok(Some(record.clone())),
            Some(RetryWrite::Delete { .. }) => Ok(None),
            None => self.base.retry(key),
        }
    }

    fn retry_older_than(&self, before_ms: i64, limit: usize) -> Result<Vec<(i64, RetryKey)>, StoreError> {
        // The base does not know this batch's writes: ask it for enough to
        // make up for every record they hide (a base record is hidden only
        // by a key this batch deleted, and perhaps put again), then merge the
        // batch in, so the answer is the one the committed store would give.
        let mut out: Vec<(i64, RetryKey)> = self
            .base
            .retry_older_than(before_ms, limit + self.retry_shadowed)?
            .into_iter()
            .filter(|(_, k)| !self.batch.retry.contains_key(k))
            .collect();
        if self.min_retry_put_ms < before_ms {
            for (k, w) in &self.batch.retry {
                if let RetryWrite::Put { record: r, .. } = w {
                    if r.time_ms < before_ms {
                        out.push((r.time_ms, k.clone()));
                    }
                }
            }
        }
        out.sort();
        out.truncate(limit);
        Ok(out)
    }

    fn block(&self, id: BlockId) -> Result<Option<BlockRecord>, StoreError> {
        match self.batch.blocks.get(&id) {
            Some(v) => Ok(*v),
            None => self.base.block(id),
        }
    }

    fn lease(&self, holder: &str) -> Result<Option<LeaseRecord>, StoreError> {
        match self.batch.leases.get(holder) {
            Some(v) => Ok(*v),
            None => self.base.lease(holder),
        }
    }
}

/// Whether setting `attr` can change a file's block or lease rows (exhaustive,
/// so a new attribute has to decide).
fn changes_derived_rows(attr: &Attr) -> bool {
    match attr {
        Attr::Close { .. } | Attr::LeaseHolder(_) | Attr::Replication(_) => true,
        Attr::Permission(_) | Attr::Owner { .. } | Attr::Times { .. } | Attr::Quota { .. } => false,
    }
}
