//! Planning of `rename` (old semantics: `false` for most failures) and
//! `rename2` (typed errors, optional OVERWRITE), after HDFS's FSDirRenameOp.

use raftfs_proto::{FsError, OpResult};

use super::delta::Mutation;
use super::permission::WRITE;
use super::plan::Planner;
use super::read::count_subtree;
use super::resolve::Resolved;
use crate::inode::{Inode, InodeId};
use crate::path::FsPath;
use crate::store::ReadView;

impl<V: ReadView + ?Sized> Planner<'_, V> {
    pub(crate) fn rename(&mut self, src: &str, dst: &str) -> Result<OpResult, FsError> {
        let rs = self.resolve(src)?;
        let Some(s) = rs.target().cloned() else {
            return Ok(OpResult::Bool(false));
        };
        if rs.path.components.is_empty() {
            return Ok(OpResult::Bool(false)); // root (or a bare reserved inode path)
        }
        let mut rd = self.resolve(dst)?;
        if rd.path.text == rs.path.text {
            return Ok(OpResult::Bool(true));
        }
        // A directory destination means "move into it".
        if let Some(t) = rd.target() {
            if t.is_dir() && t.id != s.id {
                let into = format!(
                    "{}/{}",
                    rd.path.text.trim_end_matches('/'),
                    rs.path.name().expect("has a name")
                );
                let into_path = FsPath::parse(&into)?;
                if into_path.text == rs.path.text {
                    return Ok(OpResult::Bool(true));
                }
                rd = self.resolve(&into)?;
            }
        }
        if rd.inodes.iter().any(|i| i.id == s.id) {
            return Ok(OpResult::Bool(false)); // destination is the source or under it
        }
        if rd.exists() || rd.through_file || rd.parent().is_none() || rd.path.components.is_empty() {
            return Ok(OpResult::Bool(false));
        }
        self.plan_move(&rs, &s, &rd, None)?;
        Ok(OpResult::Bool(true))
    }

    pub(crate) fn rename2(&mut self, src: &str, dst: &str, overwrite: bool) -> Result<OpResult, FsError> {
        let rs = self.resolve(src)?;
        let s = rs
            .target()
            .cloned()
            .ok_or_else(|| FsError::FileNotFound(format!("rename source {} is not found.", rs.path.text)))?;
        if rs.path.components.is_empty() {
            return Err(FsError::InvalidRename(format!(
                "Rename source {} cannot be the root",
                rs.path.text
            )));
        }
        let rd = self.resolve(dst)?;
        if rd.path.text == rs.path.text || rd.target().is_some_and(|t| t.id == s.id) {
            return Err(FsError::FileAlreadyExists(format!(
                "The source {} and destination {} are the same",
                rs.path.text, rd.path.text
            )));
        }
        if rd.inodes.iter().any(|i| i.id == s.id) {
            return Err(FsError::InvalidRename(format!(
                "Rename destination {} is a directory or file under source {}",
                rd.path.text, rs.path.text
            )));
        }
        if rd.path.components.is_empty() {
            return Err(FsError::InvalidRename(format!(
                "rename destination {} cannot be the root",
                rd.path.text
            )));
        }
        if rd.through_file {
            return Err(FsError::ParentNotDirectory(format!(
                "rename destination parent {} is a file.",
                rd.text_at(rd.inodes.len() - 1)
            )));
        }
        if rd.parent().is_none() {
            return Err(FsError::FileNotFound(format!(
                "rename destination parent {} not found.",
                rd.path.prefix_text(rd.path.components.len() - 1)
            )));
        }
        let mut replaced = None;
        if let Some(d) = rd.target().cloned() {
            if !overwrite {
                return Err(FsError::FileAlreadyExists(format!(
                    "rename destination {} already exists",
                    rd.path.text
                )));
            }
            match (s.is_dir(), d.is_dir()) {
                (true, false) => {
                    return Err(FsError::InvalidRename(format!(
                        "Source {} is a directory but destination {} is a file.",
                        rs.path.text, rd.path.text
                    )))
                }
                (false, true) => {
                    return Err(FsError::InvalidRename(format!(
                        "Source {} is a file but destination {} is a directory.",
                        rs.path.text, rd.path.text
                    )))
                }
                _ => {}
            }
            if d.is_dir() && d.children() > 0 {
                return Err(FsError::InvalidRename(format!(
                    "rename destination directory is not empty: {}",
                    rd.path.text
                )));
            }
            let dp = rd.parent().expect("checked above").clone();
            self.caller.check_sticky(&dp, &d, &rd.path.text)?;
            replaced = Some(d);
        }
        self.plan_move(&rs, &s, &rd, replaced.as_ref())?;
        Ok(OpResult::Unit)
    }

    /// Permission, quota and mutations of moving `s` (at `rs`) to `rd`,
    /// removing `replaced` (a file or an empty directory) first.
    fn plan_move(&mut self, rs: &Resolved, s: &Inode, rd: &Resolved, replaced: Option<&Inode>) -> Result<(), FsError> {
        let sp_idx = rs.inodes.len() - 2;
        let sp = rs.inodes[sp_idx].clone();
        let dp_idx = rd.path.components.len() - 1;
        let dp = rd.inodes[dp_idx].clone();
        self.check_at(rs, sp_idx, WRITE)?;
        self.caller.check_sticky(&sp, s, &rs.path.text)?;
        self.check_at(rd, dp_idx, WRITE)?;

        // Quotas: only directories on one side but not the other see a change.
        let src_side: Vec<InodeId> = rs.inodes[..=sp_idx]
            .iter()
            .filter(|i| i.quota().is_some())
            .map(|i| i.id)
            .collect();
        let dst_side: Vec<InodeId> = rd.inodes[..=dp_idx]
            .iter()
            .filter(|i| i.quota().is_some())
            .map(|i| i.id)
            .collect();
        let differs = src_side.iter().any(|i| !dst_side.contains(i)) || dst_side.iter().any(|i| !src_side.contains(i));
        let (ns, ds) = if differs { count_subtree(self.view, s)? } else { (0, 0) };
        let (rep_ns, rep_ds) = replaced.map(|r| (1i64, r.space_consumed() as i64)).unwrap_or((0, 0));
        self.check_quota(rd, dp_idx + 1, ns as i64 - rep_ns, ds as i64 - rep_ds, &src_side)?;

        let sname = rs.path.name().expect("has a name").to_string();
        let dname = rd.path.name().expect("has a name").to_string();
        self.muts.push(Mutation::Unlink {
            parent: sp.id,
            name: sname,
            child: s.id,
        });
        if let Some(r) = replaced {
            self.muts.push(Mutation::Unlink {
                parent: dp.id,
                name: dname.clone(),
                child: r.id,
            });
            self.muts.push(Mutation::DeleteInode(r.id));
        }
        self.muts.push(Mutation::Link {
            parent: dp.id,
            name: dname,
            child: s.id,
        });
        self.muts.push(Mutation::TouchDir {
            id: sp.id,
            mtime: self.time,
            children: -1,
        });
        let added = if replaced.is_some() { 0 } else { 1 };
        self.muts.push(Mutation::TouchDir {
            id: dp.id,
            mtime: self.time,
            children: added,
        });
        self.charge(rs, sp_idx + 1, -(ns as i64), -(ds as i64), &dst_side);
        self.charge(rd, dp_idx + 1, ns as i64, ds as i64, &src_side);
        if rep_ns != 0 {
            self.charge(rd, dp_idx + 1, -rep_ns, -rep_ds, &[]);
        }
        Ok(())
    }
}
