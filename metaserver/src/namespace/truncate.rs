//! Planning of `truncate` (HDFS FSDirTruncateOp, in place: no snapshots
//! here, so no copy-on-truncate).
//!
//! Blocks wholly past the new length are dropped (their replicas are
//! invalidated as for a delete). At a block boundary that is all: the file
//! stays closed and the answer is `true`. Otherwise the block holding the
//! new end must be cut on the DataNodes: its committed length becomes the
//! bytes it keeps, the file is opened for [`TRUNCATE_HOLDER`], and a
//! recovery stamp is taken ([`OpResult::TruncateStarted`]); the member
//! asks the block's replicas to cut themselves to that length (the
//! DataNode recomputes the last chunk's checksum), and their
//! commitBlockSynchronization closes the file. The answer is then `false`,
//! as HDFS's: "wait for block recovery before updating this file". The
//! holder is what keeps the intent in the replicated state: a recovery
//! that did not finish is started again, to the same length, by the lease
//! monitor or a recoverLease; a create or append meanwhile is told to
//! try again.
//!
//! Rules and messages are HDFS's: a closed file (its writer gets
//! `AlreadyBeingCreated`), WRITE on it, no larger length; the same length
//! changes nothing.

use raftfs_proto::{Block, FsError, OpResult};

use super::data::{file_mut, TRUNCATE_HOLDER};
use super::delta::{Attr, Mutation};
use super::permission::WRITE;
use super::plan::Planner;
use crate::inode::InodeKind;
use crate::store::ReadView;

impl<V: ReadView + ?Sized> Planner<'_, V> {
    pub(crate) fn truncate(&mut self, raw: &str, new_length: u64) -> Result<OpResult, FsError> {
        let r = self.resolve(raw)?;
        let t = r.file()?;
        self.check_at(&r, r.inodes.len() - 1, WRITE)?;
        if let Some(holder) = t.lease_holder() {
            if holder == self.ctx.client_id {
                return Err(FsError::AlreadyBeingCreated(format!(
                    "Failed to TRUNCATE_FILE {} for {holder} because {holder} is already the current lease holder.",
                    r.path.text
                )));
            }
            self.check_lease_conflict(&r.path.text, holder, "TRUNCATE_FILE")?;
        }
        let old_length = t.length();
        if new_length > old_length {
            return Err(FsError::InvalidArgument(format!(
                "Cannot truncate to a larger file size. Current size: {old_length}, truncate size: {new_length}."
            )));
        }
        if new_length == old_length {
            return Ok(OpResult::Bool(true));
        }
        // Keep the blocks that start before the new end.
        let mut keep = 0;
        let mut start = 0u64;
        for b in t.blocks() {
            if start >= new_length {
                break;
            }
            start += b.num_bytes;
            keep += 1;
        }
        let mut new = t.clone();
        let (blocks, length) = file_mut(&mut new);
        for b in blocks.drain(keep..).rev() {
            self.muts.push(Mutation::RemoveLastBlock { id: t.id, expect: b.id });
        }
        // `start` is now the end of the last kept block.
        let cut = blocks.last().map(|last| (*last, last.num_bytes - (start - new_length)));
        *length = new_length;
        self.muts.push(Mutation::SetAttr {
            id: t.id,
            attr: Attr::Times {
                mtime: Some(self.time),
                atime: None,
            },
        });
        let (last, keeps) = match cut {
            Some((last, keeps)) if keeps < last.num_bytes => (last, keeps),
            // At a block boundary (or nothing left): done.
            _ => {
                self.charge_file(&r, &t, &new)?;
                return Ok(OpResult::Bool(true));
            }
        };
        let cut_block = Block {
            num_bytes: keeps,
            ..last
        };
        *blocks.last_mut().expect("a block is kept") = cut_block;
        if let InodeKind::File { lease_holder, .. } = &mut new.kind {
            *lease_holder = Some(TRUNCATE_HOLDER.into());
        }
        self.charge_file(&r, &t, &new)?;
        self.muts.push(Mutation::SetLastBlock {
            id: t.id,
            expect: last.id,
            block: cut_block,
        });
        self.muts.push(Mutation::SetAttr {
            id: t.id,
            attr: Attr::LeaseHolder(TRUNCATE_HOLDER.into()),
        });
        let recovery_id = self.alloc_gen_stamp()?;
        Ok(OpResult::TruncateStarted {
            inode: t.id,
            block: cut_block,
            recovery_id,
        })
    }
}
