//! Read operations: getFileInfo, getListing, getContentSummary. They never
//! write and never take the apply path; on the leader they run against the
//! committed store after a linearizability check (see `crate::server`).

use raftfs_proto::limits::MAX_LISTING_ENTRIES;
use raftfs_proto::{CallCtx, ContentSummary, DirectoryListing, FsError, LocatedBlock, LocatedBlocks, Op, OpResult};

use super::permission::{Caller, EXECUTE, READ};
use super::plan::SUBTREE_PAGE_ENTRIES;
use super::resolve::resolve;
use super::NsConfig;
use crate::inode::{Inode, InodeId};
use crate::path::FsPath;
use crate::store::ReadView;

/// Answer a read `op` from `view`.
pub fn read<V: ReadView + ?Sized>(cfg: &NsConfig, view: &V, ctx: &CallCtx, op: &Op) -> Result<OpResult, FsError> {
    let caller = Caller::new(ctx, &cfg.superuser, &cfg.supergroup);
    match op {
        Op::GetFileInfo { path } => {
            let r = resolve(view, FsPath::parse(path)?)?;
            caller.check_traverse(&r)?;
            Ok(OpResult::Status(r.target().map(|t| t.status(""))))
        }
        Op::GetListing {
            path,
            start_after,
            limit,
        } => {
            let r = resolve(view, FsPath::parse(path)?)?;
            caller.check_traverse(&r)?;
            let t = r
                .target()
                .ok_or_else(|| FsError::FileNotFound(format!("File {} does not exist.", r.path.text)))?;
            if !t.is_dir() {
                return Ok(OpResult::Listing(DirectoryListing {
                    entries: vec![t.status("")],
                    remaining_entries: 0,
                }));
            }
            caller.check(t, READ | EXECUTE, &r.path.text)?;
            let limit = match *limit as usize {
                0 => MAX_LISTING_ENTRIES,
                n => n.min(MAX_LISTING_ENTRIES),
            };
            let mut page = view.children(t.id, start_after, limit + 1)?;
            let more = page.len() > limit;
            page.truncate(limit);
            let mut entries = Vec::with_capacity(page.len());
            for (name, id) in &page {
                let child = view
                    .inode(*id)?
                    .ok_or_else(|| FsError::Internal(format!("dentry {}/{name} points at missing inode {id}", t.id)))?;
                entries.push(child.status(name));
            }
            // Exact on the first page; later pages only say whether more follow
            // (ranking a name inside a directory would need a scan).
            let remaining_entries = match (more, start_after.is_empty()) {
                (false, _) => 0,
                (true, true) => t.children().saturating_sub(entries.len() as u64).max(1),
                (true, false) => 1,
            };
            Ok(OpResult::Listing(DirectoryListing {
                entries,
                remaining_entries,
            }))
        }
        Op::GetContentSummary { path } => {
            let r = resolve(view, FsPath::parse(path)?)?;
            caller.check_traverse(&r)?;
            let t = r
                .target()
                .ok_or_else(|| FsError::FileNotFound(format!("File does not exist: {}", r.path.text)))?;
            Ok(OpResult::Summary(summarize(view, &caller, t, &r.path.text)?))
        }
        Op::GetBlockLocations { path, offset, length } => {
            let r = resolve(view, FsPath::parse(path)?)?;
            caller.check_traverse(&r)?;
            let t = r
                .target()
                .ok_or_else(|| FsError::FileNotFound(format!("File does not exist: {}", r.path.text)))?;
            if t.is_dir() {
                return Err(FsError::FileNotFound(format!("Path is not a file: {}", r.path.text)));
            }
            caller.check(t, READ, &r.path.text)?;
            Ok(OpResult::Blocks(located_blocks(t, *offset, *length)))
        }
        Op::GetAdditionalDatanode { path, block, .. } => {
            let r = resolve(view, FsPath::parse(path)?)?;
            caller.check_traverse(&r)?;
            let t = r
                .target()
                .ok_or_else(|| FsError::FileNotFound(format!("File does not exist: {}", r.path.text)))?;
            if t.lease_holder() != Some(ctx.client_id.as_str()) {
                return Err(FsError::LeaseExpired(format!(
                    "No lease on {}: File is not open for writing by {}",
                    r.path.text, ctx.client_id
                )));
            }
            let blocks = t.blocks();
            match blocks.last() {
                Some(last) if last.id == block.id => Ok(OpResult::Located(LocatedBlock {
                    block: *last,
                    offset: blocks[..blocks.len() - 1].iter().map(|b| b.num_bytes).sum(),
                    locations: Vec::new(),
                    corrupt: false,
                    token: None,
                })),
                _ => Err(FsError::InvalidArgument(format!(
                    "{}: block {block} is not the last block being written",
                    r.path.text
                ))),
            }
        }
        _ => Err(FsError::InvalidArgument(format!(
            "{} is a write, not a read",
            op.name()
        ))),
    }
}

/// The blocks of file `t` overlapping `[offset, offset + length)`, without
/// locations (the block manager adds them). A file being written reports the
/// length of its complete blocks, as HDFS does; its last block's readable
/// length is asked of the DataNodes.
pub fn located_blocks(t: &Inode, offset: u64, length: u64) -> LocatedBlocks {
    let uc = t.under_construction();
    let blocks = t.blocks();
    let end = offset.saturating_add(length);
    let mut out = Vec::new();
    let mut pos = 0u64;
    for (i, b) in blocks.iter().enumerate() {
        let last = i + 1 == blocks.len();
        let b_end = pos + b.num_bytes;
        // A block overlaps when it starts before `end` and ends after
        // `offset`; a block being written may grow, so it always counts.
        if pos < end && (b_end > offset || (uc && last)) {
            out.push(LocatedBlock {
                block: *b,
                offset: pos,
                locations: Vec::new(),
                corrupt: false,
                token: None,
            });
        }
        pos = b_end;
    }
    let complete_len = match (uc, blocks.last()) {
        (true, Some(l)) => pos - l.num_bytes,
        _ => pos,
    };
    LocatedBlocks {
        file_length: complete_len,
        blocks: out,
        under_construction: uc,
        last_block_complete: !uc,
        block_pool_id: String::new(),
    }
}

fn summarize<V: ReadView + ?Sized>(
    view: &V,
    caller: &Caller,
    top: &Inode,
    path: &str,
) -> Result<ContentSummary, FsError> {
    let (quota, space_quota) = match top.quota() {
        Some(q) => (q.ns_quota.map_or(-1, |v| v as i64), q.ds_quota.map_or(-1, |v| v as i64)),
        None => (-1, -1),
    };
    let mut s = ContentSummary {
        length: 0,
        file_count: 0,
        directory_count: 0,
        quota,
        space_consumed: 0,
        space_quota,
    };
    let mut stack = vec![(top.clone(), path.to_string())];
    while let Some((inode, ipath)) = stack.pop() {
        if !inode.is_dir() {
            s.file_count += 1;
            if let crate::inode::InodeKind::File { length, .. } = inode.kind {
                s.length += length;
            }
            s.space_consumed += inode.space_consumed();
            continue;
        }
        s.directory_count += 1;
        caller.check(&inode, READ | EXECUTE, &ipath)?;
        for_each_child(view, inode.id, |name, child| {
            stack.push((child, format!("{}/{name}", ipath.trim_end_matches('/'))));
            Ok(())
        })?;
    }
    Ok(s)
}

/// Call `f` with the name and inode of every child of directory `dir`, in
/// name order, reading [`SUBTREE_PAGE_ENTRIES`] at a time.
pub(crate) fn for_each_child<V: ReadView + ?Sized>(
    view: &V,
    dir: InodeId,
    mut f: impl FnMut(&str, Inode) -> Result<(), FsError>,
) -> Result<(), FsError> {
    let mut after = String::new();
    loop {
        let page = view.children(dir, &after, SUBTREE_PAGE_ENTRIES)?;
        for (name, id) in &page {
            let child = view
                .inode(*id)?
                .ok_or_else(|| FsError::Internal(format!("dentry {dir}/{name} points at missing inode {id}")))?;
            f(name, child)?;
        }
        if page.len() < SUBTREE_PAGE_ENTRIES {
            return Ok(());
        }
        after = page.last().expect("non-empty page").0.clone();
    }
}

/// (names, bytes of space) in the subtree rooted at `top`, including `top`.
/// A directory with a quota already knows its usage.
pub fn count_subtree<V: ReadView + ?Sized>(view: &V, top: &Inode) -> Result<(u64, u64), FsError> {
    if let Some(q) = top.quota() {
        return Ok((q.ns_used, q.ds_used));
    }
    let (mut ns, mut ds) = (0u64, 0u64);
    let mut stack = vec![top.clone()];
    while let Some(inode) = stack.pop() {
        ns += 1;
        ds += inode.space_consumed();
        if !inode.is_dir() {
            continue;
        }
        for_each_child(view, inode.id, |_, child| {
            match child.quota() {
                Some(q) => {
                    ns += q.ns_used;
                    ds += q.ds_used;
                }
                None => stack.push(child),
            }
            Ok(())
        })?;
    }
    Ok((ns, ds))
}
