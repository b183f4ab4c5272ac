//! Planning of the data-path operations (DESIGN.md §6): addBlock, complete,
//! abandonBlock, updateBlockForPipeline, updatePipeline, append,
//! recoverLease, commitBlockSynchronization and renewLease.
//!
//! What is replicated here is what HDFS logs: which blocks make up a file,
//! their generation stamps and committed lengths, who holds the lease, and
//! the id and stamp counters. Where replicas are (soft state) is the block
//! manager's; the member checks it before proposing (a block must have its
//! minimum replicas before the next one is allocated or the file closed), so
//! plans stay deterministic.
//!
//! Quota: a block being written is charged as a whole block (as HDFS does),
//! and the charge is corrected when its length is committed; every plan
//! here charges the difference of the file's [`Inode::space_consumed`]
//! before and after.

use raftfs_proto::{Block, FsError, LocatedBlock, OpResult};

use super::delta::{Attr, Mutation};
use super::permission::WRITE;
use super::plan::Planner;
use super::resolve::Resolved;
use super::{read_counter, META_NEXT_BLOCK_ID, META_NEXT_GEN_STAMP};
use crate::inode::{Inode, InodeId, InodeKind, ROOT_ID};
use crate::store::ReadView;

/// How long a writer's lease protects its files from another client's
/// create or append (HDFS `LEASE_SOFTLIMIT_PERIOD`, 60 s). Compared with
/// log time, so every replica decides alike.
pub const LEASE_SOFT_LIMIT_MS: i64 = 60_000;
/// The holder of files whose lease is being recovered (HDFS gives them to
/// `HDFS_NameNode`).
pub const RECOVERY_HOLDER: &str = "raftfs-lease-recovery";
/// The holder of a file whose last block a truncate is cutting on the
/// DataNodes (see `namespace::truncate`): its recovery cuts the replicas
/// to the block's length instead of agreeing on one.
pub const TRUNCATE_HOLDER: &str = "raftfs-truncate";
/// Most blocks one file may have (HDFS `dfs.namenode.fs-limits.max-blocks-per-file`).
pub const MAX_BLOCKS_PER_FILE: usize = 10 * 1024;
/// Deepest parent chain walked when a file is named by inode id.
const MAX_PARENT_WALK: usize = raftfs_proto::limits::MAX_PATH_DEPTH + 1;

fn no_lease(path: &str, id: InodeId, client: &str, held_by: Option<&str>) -> FsError {
    match held_by {
        None => FsError::LeaseExpired(format!(
            "No lease on {path} (inode {id}): File is not open for writing. Holder {client} does not have any open files."
        )),
        Some(h) => FsError::LeaseExpired(format!(
            "No lease on {path} (inode {id}): File is held by {h}, not by {client}"
        )),
    }
}

pub(crate) fn file_mut(inode: &mut Inode) -> (&mut Vec<Block>, &mut u64) {
    match &mut inode.kind {
        InodeKind::File { blocks, length, .. } => (blocks, length),
        InodeKind::Directory { .. } => unreachable!("checked to be a file"),
    }
}

impl<V: ReadView + ?Sized> Planner<'_, V> {
    /// A new block id (on the leader, gone even if the plan then fails:
    /// allocate after every check).
    pub(crate) fn alloc_block_id(&mut self) -> Result<u64, FsError> {
        let id = match (self.leader, self.next_block) {
            (Some(env), _) => env.ids.block_id(),
            (None, Some(n)) => n,
            (None, None) => read_counter(self.view, META_NEXT_BLOCK_ID)?,
        };
        self.next_block = Some(self.next_block.map_or(id + 1, |n| n.max(id + 1)));
        Ok(id)
    }

    /// A new generation stamp (as [`Planner::alloc_block_id`]).
    pub(crate) fn alloc_gen_stamp(&mut self) -> Result<u64, FsError> {
        let gs = match (self.leader, self.next_gen_stamp) {
            (Some(env), _) => env.ids.gen_stamp(),
            (None, Some(n)) => n,
            (None, None) => read_counter(self.view, META_NEXT_GEN_STAMP)?,
        };
        self.next_gen_stamp = Some(self.next_gen_stamp.map_or(gs + 1, |n| n.max(gs + 1)));
        Ok(gs)
    }

    /// Resolve a file the caller is writing (it holds the lease).
    fn writing(&self, raw: &str) -> Result<(Resolved, Inode), FsError> {
        let r = self.resolve(raw)?;
        let t = r.file()?;
        match t.lease_holder() {
            Some(h) if h == self.ctx.client_id => Ok((r, t)),
            other => Err(no_lease(&r.path.text, t.id, &self.ctx.client_id, other)),
        }
    }

    /// Check and charge the change of `old`'s space to its ancestors
    /// `r.inodes[..len - 1]`.
    pub(crate) fn charge_file(&mut self, r: &Resolved, old: &Inode, new: &Inode) -> Result<(), FsError> {
        let ds = new.space_consumed() as i64 - old.space_consumed() as i64;
        let upto = r.inodes.len() - 1;
        self.check_quota(r, upto, 0, ds, &[])?;
        self.charge(r, upto, 0, ds, &[]);
        Ok(())
    }

    /// Charge a change of space to the ancestors of `inode` found by walking
    /// parent pointers (a file named by id has no path to resolve).
    fn charge_by_parents(&mut self, inode: &Inode, ds: i64) -> Result<(), FsError> {
        if ds == 0 {
            return Ok(());
        }
        let mut cur = inode.parent;
        for _ in 0..MAX_PARENT_WALK {
            let dir = self
                .view
                .inode(cur)?
                .ok_or_else(|| FsError::Internal(format!("inode {} has a missing parent {cur}", inode.id)))?;
            if dir.quota().is_some() {
                self.muts.push(Mutation::AddUsage { id: dir.id, ns: 0, ds });
            }
            if cur == ROOT_ID {
                return Ok(());
            }
            cur = dir.parent;
        }
        Err(FsError::Internal(format!("inode {} has no path to the root", inode.id)))
    }

    pub(crate) fn add_block(&mut self, raw: &str, previous: Option<Block>) -> Result<OpResult, FsError> {
        let (r, t) = self.writing(raw)?;
        let mut new = t.clone();
        let InodeKind::File { block_size, .. } = t.kind else {
            unreachable!("checked to be a file")
        };
        let (blocks, length) = file_mut(&mut new);
        match (previous, blocks.last().copied()) {
            (None, None) => {}
            (Some(p), Some(last)) if p.id == last.id && p.gen_stamp == last.gen_stamp => {
                if p.num_bytes > block_size {
                    return Err(FsError::InvalidArgument(format!(
                        "block {p} of {} is longer than the file's block size {block_size}",
                        r.path.text
                    )));
                }
                self.muts.push(Mutation::SetLastBlock {
                    id: t.id,
                    expect: p.id,
                    block: p,
                });
                *length = *length - last.num_bytes + p.num_bytes;
                *blocks.last_mut().expect("has a last block") = p;
            }
            (p, last) => {
                return Err(FsError::InvalidArgument(format!(
                    "addBlock of {}: the previous block {} is not the file's last block {}",
                    r.path.text,
                    p.map_or("(none)".into(), |b| b.to_string()),
                    last.map_or("(none)".into(), |b| b.to_string()),
                )))
            }
        }
        if blocks.len() >= MAX_BLOCKS_PER_FILE {
            return Err(FsError::InvalidArgument(format!(
                "File has reached the limit on maximum number of blocks (dfs.namenode.fs-limits.max-blocks-per-file): {} >= {MAX_BLOCKS_PER_FILE}",
                blocks.len()
            )));
        }
        let offset = *length;
        // The quota check first: ids are allocated only for a plan that passes.
        blocks.push(Block {
            id: 0,
            gen_stamp: 0,
            num_bytes: 0,
        });
        self.charge_file(&r, &t, &new)?;
        let block = Block {
            id: self.alloc_block_id()?,
            gen_stamp: self.alloc_gen_stamp()?,
            num_bytes: 0,
        };
        self.muts.push(Mutation::AddBlock { id: t.id, block });
        Ok(OpResult::Located(LocatedBlock {
            block,
            offset,
            locations: Vec::new(),
            corrupt: false,
            token: None,
        }))
    }

    pub(crate) fn complete(&mut self, raw: &str, last: Option<Block>) -> Result<OpResult, FsError> {
        let r = self.resolve(raw)?;
        let t = r.file()?;
        match t.lease_holder() {
            // Closed already (a retry after the reply was lost).
            None => return Ok(OpResult::Bool(true)),
            Some(h) if h == self.ctx.client_id => {}
            Some(h) => return Err(no_lease(&r.path.text, t.id, &self.ctx.client_id, Some(h))),
        }
        let mut new = t.clone();
        let (blocks, length) = file_mut(&mut new);
        match (last, blocks.last().copied()) {
            (None, None) => {}
            (Some(b), Some(l)) if b.id == l.id && b.gen_stamp == l.gen_stamp => {
                self.muts.push(Mutation::SetLastBlock {
                    id: t.id,
                    expect: b.id,
                    block: b,
                });
                *length = *length - l.num_bytes + b.num_bytes;
                *blocks.last_mut().expect("has a last block") = b;
            }
            (b, l) => {
                return Err(FsError::InvalidArgument(format!(
                    "complete of {}: the last block {} is not the file's last block {}",
                    r.path.text,
                    b.map_or("(none)".into(), |b| b.to_string()),
                    l.map_or("(none)".into(), |b| b.to_string()),
                )))
            }
        }
        if let InodeKind::File { lease_holder, .. } = &mut new.kind {
            *lease_holder = None;
        }
        self.charge_file(&r, &t, &new)?;
        self.muts.push(Mutation::SetAttr {
            id: t.id,
            attr: Attr::Close { mtime: self.time },
        });
        Ok(OpResult::Bool(true))
    }

    pub(crate) fn abandon_block(&mut self, raw: &str, block: Block) -> Result<OpResult, FsError> {
        let (r, t) = self.writing(raw)?;
        if t.blocks().last().map(|b| b.id) != Some(block.id) {
            // Abandoned already (a retry), or never the last block: nothing to do.
            return Ok(OpResult::Unit);
        }
        let mut new = t.clone();
        let (blocks, length) = file_mut(&mut new);
        let gone = blocks.pop().expect("has a last block");
        *length -= gone.num_bytes;
        self.charge_file(&r, &t, &new)?;
        self.muts.push(Mutation::RemoveLastBlock {
            id: t.id,
            expect: block.id,
        });
        Ok(OpResult::Unit)
    }

    /// The last block of `t` if it is `block` (same id, stamp not newer).
    fn last_block_is(&self, r: &Resolved, t: &Inode, block: &Block) -> Result<Block, FsError> {
        match t.blocks().last() {
            Some(l) if l.id == block.id && block.gen_stamp <= l.gen_stamp => Ok(*l),
            l => Err(FsError::InvalidArgument(format!(
                "{}: block {block} is not the last block being written ({})",
                r.path.text,
                l.map_or("none".into(), |b| b.to_string())
            ))),
        }
    }

    pub(crate) fn update_block_for_pipeline(&mut self, raw: &str, block: Block) -> Result<OpResult, FsError> {
        let (r, t) = self.writing(raw)?;
        let last = self.last_block_is(&r, &t, &block)?;
        let offset = t.blocks()[..t.blocks().len() - 1].iter().map(|b| b.num_bytes).sum();
        let gen_stamp = self.alloc_gen_stamp()?;
        Ok(OpResult::Located(LocatedBlock {
            block: Block {
                gen_stamp,
                num_bytes: block.num_bytes.max(last.num_bytes),
                ..last
            },
            offset,
            locations: Vec::new(),
            corrupt: false,
            token: None,
        }))
    }

    pub(crate) fn update_pipeline(&mut self, raw: &str, old: Block, new_block: Block) -> Result<OpResult, FsError> {
        let (r, t) = self.writing(raw)?;
        let last = self.last_block_is(&r, &t, &old)?;
        if last.gen_stamp == new_block.gen_stamp && last.id == new_block.id {
            return Ok(OpResult::Unit); // applied already
        }
        let next = read_counter(self.view, META_NEXT_GEN_STAMP)?;
        if new_block.id != old.id
            || old.gen_stamp != last.gen_stamp
            || new_block.gen_stamp <= last.gen_stamp
            || new_block.gen_stamp >= next
            || new_block.num_bytes < last.num_bytes
        {
            return Err(FsError::InvalidArgument(format!(
                "{}: update of block {last} (length {}) to {new_block} (length {}) is not valid",
                r.path.text, last.num_bytes, new_block.num_bytes
            )));
        }
        let mut new = t.clone();
        let (blocks, length) = file_mut(&mut new);
        *length = *length - last.num_bytes + new_block.num_bytes;
        *blocks.last_mut().expect("has a last block") = new_block;
        self.charge_file(&r, &t, &new)?;
        self.muts.push(Mutation::SetLastBlock {
            id: t.id,
            expect: old.id,
            block: new_block,
        });
        Ok(OpResult::Unit)
    }

    /// Another client wants `t`, held by `holder`: refuse while the lease
    /// holds, or say a recovery is needed once its soft limit passed.
    pub(crate) fn check_lease_conflict(&self, path: &str, holder: &str, what: &str) -> Result<(), FsError> {
        if holder == RECOVERY_HOLDER {
            return Err(FsError::RecoveryInProgress(format!(
                "Failed to {what} {path} for {}: lease recovery is in progress. Try again later.",
                self.ctx.client_id
            )));
        }
        if holder == TRUNCATE_HOLDER {
            return Err(FsError::RecoveryInProgress(format!(
                "Failed to {what} {path} for {}: a truncate is cutting its last block. Try again later.",
                self.ctx.client_id
            )));
        }
        let renewed = self.view.lease(holder)?.map_or(i64::MIN, |l| l.renewed_ms);
        if self.time.saturating_sub(renewed) > LEASE_SOFT_LIMIT_MS {
            return Err(FsError::RecoveryInProgress(format!(
                "Failed to {what} {path} for {}: the lease of {holder} passed its soft limit; recover it with recoverLease and try again.",
                self.ctx.client_id
            )));
        }
        Err(FsError::AlreadyBeingCreated(format!(
            "Failed to {what} {path} for {} because this file lease is currently owned by {holder}",
            self.ctx.client_id
        )))
    }

    pub(crate) fn append(&mut self, raw: &str) -> Result<OpResult, FsError> {
        let r = self.resolve(raw)?;
        let t = r
            .target()
            .cloned()
            .ok_or_else(|| FsError::FileNotFound(format!("Failed to append to non-existent file {}", r.path.text)))?;
        if t.is_dir() {
            return Err(FsError::FileNotFound(format!(
                "Failed to append to non-existent file {}: it is a directory",
                r.path.text
            )));
        }
        self.check_at(&r, r.inodes.len() - 1, WRITE)?;
        if let Some(h) = t.lease_holder() {
            if h == self.ctx.client_id {
                return Err(FsError::AlreadyBeingCreated(format!(
                    "Failed to APPEND_FILE {} for {}: the current leaseholder is trying to recreate file.",
                    r.path.text, self.ctx.client_id
                )));
            }
            self.check_lease_conflict(&r.path.text, h, "APPEND_FILE")?;
        }
        let mut new = t.clone();
        if let InodeKind::File { lease_holder, .. } = &mut new.kind {
            *lease_holder = Some(self.ctx.client_id.clone());
        }
        let InodeKind::File { block_size, length, .. } = t.kind else {
            unreachable!("checked to be a file")
        };
        // A partial last block is reopened; a full one (or none) means the
        // writer starts a new block.
        let last = t.blocks().last().copied().filter(|b| b.num_bytes < block_size);
        self.charge_file(&r, &t, &new)?;
        self.muts.push(Mutation::SetAttr {
            id: t.id,
            attr: Attr::LeaseHolder(self.ctx.client_id.clone()),
        });
        let mut status = t.status("");
        status.under_construction = true;
        Ok(OpResult::Appended {
            status,
            last: last.map(|b| LocatedBlock {
                block: b,
                offset: length - b.num_bytes,
                locations: Vec::new(),
                corrupt: false,
                token: None,
            }),
        })
    }

    pub(crate) fn recover_lease(&mut self, raw: &str) -> Result<OpResult, FsError> {
        let r = self.resolve(raw)?;
        let t = r.file()?;
        self.check_at(&r, r.inodes.len() - 1, WRITE)?;
        if !t.under_construction() {
            return Ok(OpResult::Bool(true));
        }
        let Some(last) = t.blocks().last().copied() else {
            // Nothing was written: close it now.
            self.muts.push(Mutation::SetAttr {
                id: t.id,
                attr: Attr::Close { mtime: self.time },
            });
            return Ok(OpResult::Bool(true));
        };
        // A truncate's recovery that did not finish: start it again, to the
        // same length.
        if t.lease_holder() == Some(TRUNCATE_HOLDER) {
            let recovery_id = self.alloc_gen_stamp()?;
            self.muts.push(Mutation::RenewLease {
                holder: TRUNCATE_HOLDER.into(),
            });
            return Ok(OpResult::TruncateStarted {
                inode: t.id,
                block: last,
                recovery_id,
            });
        }
        // The DataNodes must agree on the last block's length: give the file
        // to the recovery holder and stamp the recovery.
        let recovery_id = self.alloc_gen_stamp()?;
        if t.lease_holder() != Some(RECOVERY_HOLDER) {
            self.muts.push(Mutation::SetAttr {
                id: t.id,
                attr: Attr::LeaseHolder(RECOVERY_HOLDER.into()),
            });
        } else {
            self.muts.push(Mutation::RenewLease {
                holder: RECOVERY_HOLDER.into(),
            });
        }
        Ok(OpResult::RecoveryStarted {
            inode: t.id,
            block: last,
            recovery_id,
        })
    }

    pub(crate) fn commit_block_sync(
        &mut self,
        inode: InodeId,
        block: Block,
        new_gen_stamp: u64,
        new_length: u64,
    ) -> Result<OpResult, FsError> {
        self.caller.require_superuser(" to commit a block recovery")?;
        let gone = || FsError::FileNotFound(format!("File does not exist: inode {inode}"));
        let t = self.view.inode(inode)?.ok_or_else(gone)?;
        // A file in a subtree a recursive delete detached (`--exec leader`;
        // `namespace::reclaim`) is deleted, as `--exec apply` deleted it whole.
        if !super::reclaim::attached(self.view, inode)? {
            return Err(gone());
        }
        if t.is_dir() || !t.under_construction() {
            // Closed already (another recovery, or a retry): nothing to do.
            return Ok(OpResult::Unit);
        }
        let last = match t.blocks().last() {
            Some(l) if l.id == block.id => *l,
            _ => return Ok(OpResult::Unit),
        };
        if new_gen_stamp <= last.gen_stamp || new_gen_stamp >= read_counter(self.view, META_NEXT_GEN_STAMP)? {
            return Err(FsError::InvalidArgument(format!(
                "commitBlockSynchronization of {last}: recovery stamp {new_gen_stamp} is not valid"
            )));
        }
        if t.lease_holder() == Some(TRUNCATE_HOLDER) && new_length != last.num_bytes {
            return Err(FsError::InvalidArgument(format!(
                "commitBlockSynchronization of {last}: a truncate cuts it to {} bytes, not {new_length}",
                last.num_bytes
            )));
        }
        let mut new = t.clone();
        let (blocks, length) = file_mut(&mut new);
        *length -= last.num_bytes;
        if new_length == 0 {
            blocks.pop();
            self.muts.push(Mutation::RemoveLastBlock {
                id: t.id,
                expect: last.id,
            });
        } else {
            let b = Block {
                id: last.id,
                gen_stamp: new_gen_stamp,
                num_bytes: new_length,
            };
            *length += new_length;
            *blocks.last_mut().expect("has a last block") = b;
            self.muts.push(Mutation::SetLastBlock {
                id: t.id,
                expect: last.id,
                block: b,
            });
        }
        if let InodeKind::File { lease_holder, .. } = &mut new.kind {
            *lease_holder = None;
        }
        self.charge_by_parents(&t, new.space_consumed() as i64 - t.space_consumed() as i64)?;
        self.muts.push(Mutation::SetAttr {
            id: t.id,
            attr: Attr::Close { mtime: self.time },
        });
        Ok(OpResult::Unit)
    }

    pub(crate) fn set_datanode_admin(&mut self, node: &str, on: bool) -> Result<OpResult, FsError> {
        self.caller.require_superuser(" to decommission DataNodes")?;
        if node.is_empty()
            || node.len() > raftfs_proto::limits::MAX_MEMBER_ADDR_LEN_BYTES
            || node.contains(char::is_control)
        {
            return Err(FsError::InvalidArgument(format!(
                "DataNode name {node:?} is not a uuid, HOST:PORT or host name"
            )));
        }
        if on && super::decommissioned(self.view)?.len() >= super::MAX_DECOMMISSIONING_NODES {
            return Err(FsError::InvalidArgument(format!(
                "at most {} DataNodes may be decommissioned at once",
                super::MAX_DECOMMISSIONING_NODES
            )));
        }
        self.muts.push(Mutation::Decommission {
            node: node.to_string(),
            on,
        });
        Ok(OpResult::Unit)
    }

    pub(crate) fn renew_lease(&mut self) -> Result<OpResult, FsError> {
        self.muts.push(Mutation::RenewLease {
            holder: self.ctx.client_id.clone(),
        });
        Ok(OpResult::Unit)
    }
}
