//! Path resolution: walk a [`FsPath`] from its start inode through the
//! dentry table, stopping at the first missing component or at a file with
//! components left below it.

use raftfs_proto::FsError;

use crate::inode::{Inode, ROOT_ID};
use crate::path::FsPath;
use crate::store::{ReadView, Walk};

#[derive(Debug, Clone)]
pub struct Resolved {
    pub path: FsPath,
    /// `inodes[0]` is the start inode; `inodes[i]` is component `i - 1`.
    pub inodes: Vec<Inode>,
    /// Resolution stopped at a file while components remained.
    pub through_file: bool,
}

impl Resolved {
    pub fn exists(&self) -> bool {
        self.inodes.len() == self.path.components.len() + 1
    }

    pub fn target(&self) -> Option<&Inode> {
        if self.exists() {
            self.inodes.last()
        } else {
            None
        }
    }

    /// The parent of the target, if the path has a last component and the
    /// parent exists.
    pub fn parent(&self) -> Option<&Inode> {
        let n = self.path.components.len();
        if n == 0 || self.inodes.len() < n {
            None
        } else {
            Some(&self.inodes[n - 1])
        }
    }

    /// The file the path names, or HDFS's `INodeFile.valueOf` refusal
    /// ("File does not exist", "Path is not a file").
    pub fn file(&self) -> Result<Inode, FsError> {
        match self.target() {
            None => Err(FsError::FileNotFound(format!(
                "File does not exist: {}",
                self.path.text
            ))),
            Some(t) if t.is_dir() => Err(FsError::FileNotFound(format!("Path is not a file: {}", self.path.text))),
            Some(t) => Ok(t.clone()),
        }
    }

    pub fn last_existing(&self) -> &Inode {
        self.inodes.last().expect("resolution always holds the start inode")
    }

    /// Text of the path down to `inodes[i]`.
    pub fn text_at(&self, i: usize) -> String {
        self.path.prefix_text(i)
    }

    /// Number of path components that do not exist.
    pub fn missing(&self) -> usize {
        self.path.components.len() + 1 - self.inodes.len()
    }
}

/// Resolve `path` (kept in the result, not copied: a deep path's components
/// were a measurable share of a create's cost).
pub fn resolve<V: ReadView + ?Sized>(view: &V, path: FsPath) -> Result<Resolved, FsError> {
    let start = path.start.unwrap_or(ROOT_ID);
    let not_found = || FsError::FileNotFound(format!("File does not exist: {}", path.prefix_text(0)));
    let first = view.inode(start)?.ok_or_else(|| {
        if path.start.is_some() {
            not_found()
        } else {
            FsError::Internal("root inode missing: store not formatted".into())
        }
    })?;
    // An inode named by id must hang under the root: one in a subtree a
    // recursive delete detached is gone (`namespace::reclaim`).
    if path.start.is_some() && !super::reclaim::attached(view, start)? {
        return Err(not_found());
    }
    let mut inodes = Vec::with_capacity(path.components.len() + 1);
    inodes.push(first);
    let through_file = match view.walk(&path.components, &mut inodes)? {
        Walk::Ended => false,
        Walk::ThroughFile => true,
        Walk::Dangling { parent, name, child } => {
            let name = &path.components[name];
            return Err(FsError::Internal(format!(
                "dentry {parent}/{name} points at missing inode {child}"
            )));
        }
    };
    Ok(Resolved {
        path,
        inodes,
        through_file,
    })
}
