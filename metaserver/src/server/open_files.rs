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
//! listed, holders in name order, and at most [`MAX_OPEN_FILES_SCANNED`]
//! looked at (a `-path` filter that matches few of many open files may
//! therefore list fewer than exist, and says so).

use raftfs_proto::admin::{OpenFileEntry, MAX_OPEN_FILES_LISTED};
use raftfs_proto::limits::MAX_PATH_DEPTH;

use crate::inode::{InodeId, ROOT_ID};
use crate::namespace::ownership::within;
use crate::store::{ReadView, Store, StoreError};

/// Most open files one listing looks at (named and tested against its
/// path), listed or not.
pub const MAX_OPEN_FILES_SCANNED: usize = 10_000;
/// Most directory entries searched to name one open file.
pub const MAX_NAME_SEARCH_ENTRIES: usize = 10_000;
/// Entries read per page while searching.
const NAME_SEARCH_PAGE_ENTRIES: usize = 1000;
/// Lease holders read per page.
const LEASES_PAGE_ENTRIES: usize = 1000;

/// The files of `store` open for write at `under` (a normalized path) or
/// below it (`/`: all),
/// at most [`MAX_OPEN_FILES_LISTED`]; and whether more may have been left
/// out (more matched, or [`MAX_OPEN_FILES_SCANNED`] were looked at).
pub fn open_files(store: &dyn Store, under: &str) -> Result<(Vec<OpenFileEntry>, bool), StoreError> {
    let view = store.view();
    let mut out = Vec::new();
    let mut scanned = 0;
    let mut after = String::new();
    loop {
        let page = store.leases_page(&after, LEASES_PAGE_ENTRIES)?;
        let Some((last, _)) = page.last() else {
            return Ok((out, false));
        };
        after = last.clone();
        for (holder, lease) in page {
            for id in store.lease_files(&holder, MAX_OPEN_FILES_SCANNED + 1 - scanned)? {
                if out.len() == MAX_OPEN_FILES_LISTED || scanned == MAX_OPEN_FILES_SCANNED {
                    return Ok((out, true));
                }
                scanned += 1;
                let Some(inode) = view.inode(id)? else { continue };
                let path = path_of(&*view, id)?.unwrap_or_else(|| format!("/.reserved/.inodes/{id}"));
                if !within(&path, under) {
                    continue;
                }
                out.push(OpenFileEntry {
                    inode: id,
                    path,
                    length: inode.length(),
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
