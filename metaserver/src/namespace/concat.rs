//! Planning of `concat` (HDFS FSDirConcatOp): the blocks of closed source
//! files move, in the order given, to the end of a closed target file in
//! the same directory, and the sources are deleted. No byte moves on a
//! DataNode: the blocks keep their ids, stamps and replicas, only the file
//! they belong to changes ([`Mutation::MoveBlocks`]), so no replica is
//! invalidated.
//!
//! Rules and messages are HDFS's: the target must be a closed file; each
//! source a closed, non-empty file in the target's directory, not the
//! target, named once, with a preferred block size no larger than the
//! target's; no `/.reserved` path. Blocks may then be shorter than the
//! block size in the middle of a file, as in HDFS since variable-length
//! blocks; reads find offsets by summing block lengths.
//!
//! Permissions: WRITE on the target; READ on each source and WRITE on its
//! directory (to delete it), as HDFS checks. Unlike HDFS, a sticky
//! directory's rule applies to the sources too: concat deletes them, and
//! deleting another user's file from `/tmp` is what the sticky bit forbids.
//!
//! Quota: the directory loses one name per source; space changes only
//! where a source's replication differs from the target's (its bytes are
//! then counted at the target's replication).

use std::collections::HashSet;

use raftfs_proto::limits::MAX_CONCAT_SOURCES;
use raftfs_proto::{FsError, OpResult};

use super::delta::{Attr, Mutation};
use super::permission::{READ, WRITE};
use super::plan::Planner;
use crate::path::{FsPath, RESERVED_NAME};
use crate::store::ReadView;

fn invalid(msg: String) -> FsError {
    FsError::InvalidArgument(msg)
}

/// Refuse `/.reserved/.inodes` paths, as HDFS's concat does (the parser
/// refuses every other `/.reserved` path).
fn check_not_reserved(raw: &str) -> Result<(), FsError> {
    if FsPath::parse(raw)?.start.is_some() {
        return Err(invalid(format!(
            "Concat operation doesn't support /{RESERVED_NAME} relative path : {raw}"
        )));
    }
    Ok(())
}

impl<V: ReadView + ?Sized> Planner<'_, V> {
    pub(crate) fn concat(&mut self, target: &str, sources: &[String]) -> Result<OpResult, FsError> {
        if target.is_empty() {
            return Err(invalid("Target file name is empty".into()));
        }
        if sources.is_empty() {
            return Err(invalid("No sources given".into()));
        }
        if sources.len() > MAX_CONCAT_SOURCES {
            return Err(invalid(format!(
                "concat: {} source files given; at most {MAX_CONCAT_SOURCES} are joined in one call",
                sources.len()
            )));
        }
        check_not_reserved(target)?;
        for s in sources {
            check_not_reserved(s)?;
        }
        let rt = self.resolve(target)?;
        let t = rt.file()?;
        let tidx = rt.inodes.len() - 1;
        self.check_at(&rt, tidx, WRITE)?;
        if t.under_construction() {
            return Err(invalid(format!(
                "concat: target file {} is under construction",
                rt.path.text
            )));
        }
        let pidx = tidx - 1;
        let parent = rt.inodes[pidx].clone();
        let mut seen = HashSet::with_capacity(sources.len());
        let mut moves = Vec::with_capacity(sources.len());
        let mut ds = 0i64;
        for raw in sources {
            let rs = self.resolve(raw)?;
            let s = rs.file()?;
            let sidx = rs.inodes.len() - 1;
            self.check_at(&rs, sidx, READ)?;
            self.check_at(&rs, sidx - 1, WRITE)?;
            self.caller.check_sticky(&rs.inodes[sidx - 1], &s, &rs.path.text)?;
            if s.parent != parent.id {
                return Err(invalid(format!(
                    "Source file {} is not in the same directory with the target {}",
                    rs.path.text, rt.path.text
                )));
            }
            if s.id == t.id {
                return Err(invalid(format!(
                    "concat: the src file {} is the same with the target file {}",
                    rs.path.text, rt.path.text
                )));
            }
            if s.under_construction() || s.blocks().is_empty() {
                return Err(invalid(format!(
                    "concat: source file {} is invalid or empty or underConstruction",
                    rs.path.text
                )));
            }
            if s.block_size() > t.block_size() {
                return Err(invalid(format!(
                    "concat: source file {} has preferred block size {} which is greater than the target file's preferred block size {}",
                    rs.path.text,
                    s.block_size(),
                    t.block_size()
                )));
            }
            if !seen.insert(s.id) {
                return Err(invalid("concat: at least two of the source files are the same".into()));
            }
            ds += s.length() as i64 * (t.replication() as i64 - s.replication() as i64);
            let name = rs.path.name().expect("a file has a name").to_string();
            moves.push((s, name));
        }
        let ns = -(moves.len() as i64);
        self.check_quota(&rt, tidx, ns, ds, &[])?;
        for (s, name) in &moves {
            self.muts.push(Mutation::MoveBlocks {
                from: s.id,
                to: t.id,
                expect: s.blocks().iter().map(|b| b.id).collect(),
            });
            self.muts.push(Mutation::Unlink {
                parent: parent.id,
                name: name.clone(),
                child: s.id,
            });
            self.muts.push(Mutation::DeleteInode(s.id));
        }
        self.muts.push(Mutation::SetAttr {
            id: t.id,
            attr: Attr::Times {
                mtime: Some(self.time),
                atime: None,
            },
        });
        self.muts.push(Mutation::TouchDir {
            id: parent.id,
            mtime: self.time,
            children: ns,
        });
        self.charge(&rt, tidx, ns, ds, &[]);
        Ok(OpResult::Unit)
    }
}
