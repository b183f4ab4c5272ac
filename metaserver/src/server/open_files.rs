//! The files writers hold open, with their lease holders (`hdfs dfsadmin
//! -listOpenFiles`, and the NameNode UI's open files), read from this
//! member's applied state.
//!
//! Leases are kept by holder (client name) and each holder's open files
//! by inode id; an inode knows its parent but not its own name, so a
//! file's path is found by looking for its id among its parent's entries,
//! level by level. That look is bounded ([`MAX_NAME_SEARCH_ENTRIES`] names
//! per file): a file in a directory too large to search within the bound
//! is shown by its reserved path (`/.reserved/.inodes/<id>`), which every
//! path-taking call accepts. At most [`MAX_OPEN_FILES_LISTED`] files are
//! listed, holders in name order.

use raftfs_proto::limits::MAX_PATH_DEPTH;

use crate::inode::{InodeId, ROOT_ID};
use crate::store::{ReadView, Store, StoreError};

/// Most open files one listing shows.
pub const MAX_OPEN_FILES_LISTED: usize = 1000;
/// Most directory entries searched to name one open file.
pub const MAX_NAME_SEARCH_ENTRIES: usize = 10_000;
/// Entries read per page while searching.
const NAME_SEARCH_PAGE_ENTRIES: usize = 1000;
/// Lease holders read per page.
const LEASES_PAGE_ENTRIES: usize = 1000;

/// One file open for write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFile {
    pub inode: InodeId,
    /// Its path, or `/.reserved/.inodes/<id>` when it could not be named
    /// within the bound.
    pub path: String,
    /// Bytes in its blocks so far (what completed blocks and the last
    /// one's reported length say).
    pub length: u64,
    pub holder: String,
    /// Log time (ms) the holder last renewed its lease.
    pub renewed_ms: i64,
}

/// The open files of `store`, at most [`MAX_OPEN_FILES_LISTED`]; and
/// whether more were left out.
pub fn open_files(store: &dyn Store) -> Result<(Vec<OpenFile>, bool), StoreError> {
    let view = store.view();
    let mut out = Vec::new();
    let mut after = String::new();
    loop {
        let page = store.leases_page(&after, LEASES_PAGE_ENTRIES)?;
        let Some((last, _)) = page.last() else {
            return Ok((out, false));
        };
        after = last.clone();
        for (holder, lease) in page {
            for id in store.lease_files(&holder, MAX_OPEN_FILES_LISTED + 1 - out.len())? {
                if out.len() == MAX_OPEN_FILES_LISTED {
                    return Ok((out, true));
                }
                let Some(inode) = view.inode(id)? else { continue };
                out.push(OpenFile {
                    inode: id,
                    path: path_of(&*view, id)?.unwrap_or_else(|| format!("/.reserved/.inodes/{id}")),
                    length: inode.status("").length,
                    holder: holder.clone(),
                    renewed_ms: lease.renewed_ms,
                });
            }
        }
    }
}

/// The path of inode `id`, if every name on the way up is found within
/// [`MAX_NAME_SEARCH_ENTRIES`] entries searched in all.
pub fn path_of(view: &dyn ReadView, id: InodeId) -> Result<Option<String>, StoreError> {
    let mut names = Vec::new();
    let mut budget = MAX_NAME_SEARCH_ENTRIES;
    let mut at = id;
    while at != ROOT_ID {
        if names.len() >= MAX_PATH_DEPTH {
            return Ok(None);
        }
        let Some(inode) = view.inode(at)? else { return Ok(None) };
        if inode.parent == at {
            return Ok(None); // detached: no path reaches it
        }
        let Some(name) = name_in(view, inode.parent, at, &mut budget)? else {
            return Ok(None);
        };
        names.push(name);
        at = inode.parent;
    }
    names.reverse();
    Ok(Some(format!("/{}", names.join("/"))))
}

/// The name under which `parent` holds `child`, searching at most `budget` entries.
fn name_in(
    view: &dyn ReadView,
    parent: InodeId,
    child: InodeId,
    budget: &mut usize,
) -> Result<Option<String>, StoreError> {
    let mut after = String::new();
    while *budget > 0 {
        let want = NAME_SEARCH_PAGE_ENTRIES.min(*budget);
        let page = view.children(parent, &after, want)?;
        *budget -= page.len().min(*budget);
        if let Some((name, _)) = page.iter().find(|(_, id)| *id == child) {
            return Ok(Some(name.clone()));
        }
        match page.last() {
            Some((name, _)) if page.len() == want => after = name.clone(),
            _ => return Ok(None), // the directory ended
        }
    }
    Ok(None)
}
