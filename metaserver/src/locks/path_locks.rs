//! Locking the paths an operation touches, top-down, in the modes of
//! REFERENCE.md ("Fine-grained lock patterns"), and holding them in a
//! [`PathLocks`] until the operation's delta is applied.
//!
//! For `/a/b/c`:
//! * [`PathMode::Read`]: READ on every existing inode and edge;
//! * [`PathMode::WriteInode`]: the same, then WRITE on `c`'s inode;
//! * [`PathMode::WriteEdge`]: READ down to `b`, then WRITE on the edge
//!   `b→c` and on `c`'s inode if it exists; when `/a` exists but `b` does
//!   not, WRITE on `a→b` (the edge out of the last existing ancestor);
//! * [`PathMode::CreateEdge`] (mkdirs): as `WriteEdge` where a component is
//!   missing, READ everywhere when the whole path exists.
//!
//! Everything below a WRITE-locked edge counts as write-locked: the walk
//! stops there. A name's lock is taken before its entry is read, and an
//! inode's before its record is read, through a [`Store::latest_view`]:
//! writers hold their locks until their deltas are committed, so the
//! latest commit shows a locked key as it is now (a snapshot taken before
//! the lock's last holder committed would not). The plan then reads the
//! same view, with every key it relies on locked. An edge found missing
//! under a READ lock, where the mode needs it WRITE-locked, is released and
//! locked again in WRITE (it is the last lock taken, so the order holds)
//! and read again.
//!
//! A path that starts at an inode (`/.reserved/.inodes/<id>/…`, or an
//! operation that names a file only by id) is locked through the names of
//! that inode's ancestors, found from a snapshot by walking parent ids up
//! and looking each child up in its parent's listing; once locked, the
//! names are resolved again and must still lead to the inode, else the
//! locks are dropped and the walk starts over.
//!
//! Several paths (a rename's two, plus a directory a plan asked to lock in
//! WRITE) are locked in one depth-first walk of their trie: a shared
//! prefix once, in the stronger mode each step needs (a second READ of one
//! lock could wait behind a queued writer and deadlock), then the paths
//! parting there, the one whose next name sorts first first. See the
//! module docs of [`crate::locks`] for why this order cannot deadlock.

use compact_str::CompactString;

use super::pool::{Busy, HeldLock, LockKey, LockMode, LockPool};
use crate::inode::{Inode, InodeId, ROOT_ID};
use crate::path::FsPath;
use crate::store::{ReadView, Store, StoreError};

/// Times a walk over a path named by inode id starts over because the
/// inode moved before it was locked.
pub const MAX_LOCK_WALK_ATTEMPTS: usize = 8;
/// Most paths one operation locks (a rename's two, and a directory it must
/// hold in WRITE).
pub const MAX_PATHS_PER_OPERATION: usize = 3;
/// Entries of one directory read per page while looking for a child's name.
const NAME_LOOKUP_PAGE_ENTRIES: usize = 1024;

/// How an operation locks one of its paths (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathMode {
    Read,
    WriteInode,
    WriteEdge,
    CreateEdge,
}

/// One path to lock, already parsed.
#[derive(Debug, Clone)]
pub struct PathLockRequest {
    pub path: FsPath,
    pub mode: PathMode,
}

/// Why locking did not finish.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// A lock was taken by someone else (only with [`Wait::Try`]); nothing
    /// is held. Await [`Busy::wait`] before trying again.
    #[error("a lock is held by another operation")]
    WouldBlock(Busy),
    /// A path named by inode id kept moving while it was being locked.
    #[error("inode {0} moved while it was being locked, {MAX_LOCK_WALK_ATTEMPTS} times")]
    Moving(InodeId),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether a walk may wait for a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    Block,
    /// Fail with [`LockError::WouldBlock`] (holding nothing) rather than wait.
    Try,
}

/// The locks one operation holds; released on drop.
#[derive(Debug, Default)]
pub struct PathLocks {
    held: Vec<HeldLock>,
}

impl PathLocks {
    /// Locks held (the lock-stress test and the benchmark count them).
    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Whether this operation holds `id`'s inode lock in WRITE.
    pub fn writes_inode(&self, id: InodeId) -> bool {
        self.held
            .iter()
            .any(|h| h.mode() == LockMode::Write && matches!(h.key(), LockKey::Inode(i) if *i == id))
    }

    /// Keys held, in the order they were taken.
    pub fn keys(&self) -> impl Iterator<Item = (&LockKey, LockMode)> {
        self.held.iter().map(|h| (h.key(), h.mode()))
    }
}

/// What one request needs at one component of its names.
#[derive(Debug, Clone, Copy, Default)]
struct Need {
    edge: Option<LockMode>,
    /// WRITE on the edge if the entry turns out to be missing.
    write_if_missing: bool,
    inode: Option<LockMode>,
}

impl Need {
    fn merge(self, o: Need) -> Need {
        Need {
            edge: self.edge.max(o.edge),
            write_if_missing: self.write_if_missing || o.write_if_missing,
            inode: self.inode.max(o.inode),
        }
    }
}

/// A request with its names from the root.
struct Route {
    names: Vec<CompactString>,
    mode: PathMode,
    /// For a path that starts at an inode: the index in `names` after which
    /// that inode must be reached, and its id.
    anchor: Option<(usize, InodeId)>,
}

impl Route {
    fn need(&self, i: usize) -> Need {
        let last = i + 1 == self.names.len();
        let write_edge = self.mode == PathMode::WriteEdge && last;
        Need {
            edge: Some(if write_edge { LockMode::Write } else { LockMode::Read }),
            write_if_missing: matches!(self.mode, PathMode::WriteEdge | PathMode::CreateEdge),
            inode: Some(
                if last && matches!(self.mode, PathMode::WriteInode | PathMode::WriteEdge) {
                    LockMode::Write
                } else {
                    LockMode::Read
                },
            ),
        }
    }

    /// What the request needs on the root inode itself.
    fn root_need(&self) -> LockMode {
        if self.names.is_empty() && self.mode == PathMode::WriteInode {
            LockMode::Write
        } else {
            LockMode::Read
        }
    }
}

struct Walker<'a, S: Store + ?Sized> {
    pool: &'a LockPool,
    store: &'a S,
    wait: Wait,
    held: Vec<HeldLock>,
    /// What the walk reads ([`Store::latest_view`]: each read sees the
    /// latest commit); dropped before waiting for a lock (a memory-store
    /// view holds the store's read lock, which the lock's holder needs to
    /// commit) and taken again after.
    view: Option<Box<dyn ReadView + 'a>>,
}

enum Step {
    /// The component's inode, locked; the walk may go on below it.
    Into(Inode),
    /// The walk ends here (missing name, or everything below is write-locked).
    Stop,
}

impl<'a, S: Store + ?Sized> Walker<'a, S> {
    fn take(&mut self, key: LockKey, mode: LockMode) -> Result<(), LockError> {
        let h = match self.pool.try_lock_or_busy(key.clone(), mode) {
            Ok(h) => h,
            Err(busy) if self.wait == Wait::Try => return Err(LockError::WouldBlock(busy)),
            Err(_) => {
                self.view = None;
                self.pool.lock(key, mode)
            }
        };
        self.held.push(h);
        Ok(())
    }

    /// A view that shows every key locked so far as it is now.
    fn fresh(&mut self) -> &dyn ReadView {
        let store = self.store;
        &**self.view.get_or_insert_with(|| store.latest_view())
    }

    /// Lock the edge `parent/name` and what it leads to, as `need` says.
    fn step(&mut self, parent: &Inode, name: &CompactString, need: Need) -> Result<Step, LockError> {
        let mut edge = need.edge.unwrap_or(LockMode::Read);
        let key = LockKey::Edge(parent.id, name.clone());
        self.take(key.clone(), edge)?;
        let mut child = self.fresh().child(parent.id, name)?;
        if child.is_none() && need.write_if_missing && edge == LockMode::Read {
            // Missing where the operation will create it: WRITE is needed.
            // This edge is the last lock taken, so dropping and retaking it
            // keeps the order.
            self.held.pop();
            edge = LockMode::Write;
            self.take(key, edge)?;
            child = self.fresh().child(parent.id, name)?;
        }
        let Some(id) = child else {
            return Ok(Step::Stop);
        };
        let inode_mode = if edge == LockMode::Write {
            LockMode::Write
        } else {
            need.inode.unwrap_or(LockMode::Read)
        };
        self.take(LockKey::Inode(id), inode_mode)?;
        if edge == LockMode::Write {
            return Ok(Step::Stop);
        }
        match self.fresh().inode(id)? {
            Some(inode) if inode.is_dir() => Ok(Step::Into(inode)),
            // A file (nothing below it to lock) or a dangling entry (the
            // plan reports it).
            _ => Ok(Step::Stop),
        }
    }

    fn walk(&mut self, routes: &[Route]) -> Result<(), LockError> {
        let root_mode = routes.iter().map(Route::root_need).max().unwrap_or(LockMode::Read);
        self.take(LockKey::Inode(ROOT_ID), root_mode)?;
        let Some(root) = self.fresh().inode(ROOT_ID)? else {
            return Ok(()); // not formatted: the plan says so
        };
        let all: Vec<&Route> = routes.iter().collect();
        self.below(&all, 0, root)
    }

    /// Lock what `routes` (which share their first `depth` names, leading
    /// to `cur`) need below `cur`: the routes going on are grouped by their
    /// next name, groups in name order, each group's subtree before the
    /// next group's (a depth-first walk of the routes' trie).
    fn below(&mut self, routes: &[&Route], depth: usize, cur: Inode) -> Result<(), LockError> {
        let mut next: Vec<&Route> = routes.iter().copied().filter(|r| r.names.len() > depth).collect();
        next.sort_by(|a, b| a.names[depth].as_bytes().cmp(b.names[depth].as_bytes()));
        let mut i = 0;
        while i < next.len() {
            let name = &next[i].names[depth];
            let group_len = next[i..].iter().take_while(|r| r.names[depth] == *name).count();
            let group = &next[i..i + group_len];
            let need = group.iter().fold(Need::default(), |n, r| n.merge(r.need(depth)));
            if let Step::Into(child) = self.step(&cur, name, need)? {
                self.below(group, depth + 1, child)?;
            }
            i += group_len;
        }
        Ok(())
    }
}

/// The names from the root down to inode `id`, read from one snapshot;
/// `None` when `id` does not exist or has no path to the root.
fn names_to<V: ReadView + ?Sized>(view: &V, id: InodeId) -> Result<Option<Vec<CompactString>>, StoreError> {
    let mut names = Vec::new();
    let mut cur = id;
    for _ in 0..=raftfs_proto::limits::MAX_PATH_DEPTH {
        if cur == ROOT_ID {
            names.reverse();
            return Ok(Some(names));
        }
        let Some(inode) = view.inode(cur)? else {
            return Ok(None);
        };
        let parent = inode.parent;
        let mut after = String::new();
        let name = loop {
            let page = view.children(parent, &after, NAME_LOOKUP_PAGE_ENTRIES)?;
            if let Some((n, _)) = page.iter().find(|(_, c)| *c == cur) {
                break Some(n.clone());
            }
            if page.len() < NAME_LOOKUP_PAGE_ENTRIES {
                break None;
            }
            after = page.last().map(|(n, _)| n.clone()).unwrap_or_default();
        };
        let Some(name) = name else {
            return Ok(None);
        };
        names.push(CompactString::from(name));
        cur = parent;
    }
    Ok(None)
}

/// The routes of `reqs`; a path that starts at an inode is given the
/// names that lead to it (or none, when it has no path: the plan then
/// reports the missing inode, and a missing id is never reused).
fn routes<S: Store + ?Sized>(store: &S, reqs: &[PathLockRequest]) -> Result<Vec<Route>, StoreError> {
    let mut out = Vec::with_capacity(reqs.len());
    for r in reqs {
        match r.path.start {
            None => out.push(Route {
                names: r.path.components.clone(),
                mode: r.mode,
                anchor: None,
            }),
            Some(id) => {
                let view = store.view();
                let Some(mut names) = names_to(&*view, id)? else {
                    continue;
                };
                let anchor = Some((names.len(), id));
                names.extend(r.path.components.iter().cloned());
                out.push(Route {
                    names,
                    mode: r.mode,
                    anchor,
                });
            }
        }
    }
    Ok(out)
}

/// Whether every anchored route still leads to its inode (under the locks).
fn anchors_hold(view: &dyn ReadView, routes: &[Route]) -> Result<bool, StoreError> {
    for r in routes {
        let Some((depth, id)) = r.anchor else { continue };
        let mut cur = ROOT_ID;
        for name in &r.names[..depth] {
            match view.child(cur, name)? {
                Some(c) => cur = c,
                None => return Ok(false),
            }
        }
        if cur != id {
            return Ok(false);
        }
    }
    Ok(true)
}

/// An operation's locks, and a view of the store that shows every locked
/// key as it is (the plan reads it; drop it before committing).
pub struct Locked<'a> {
    pub locks: PathLocks,
    pub view: Box<dyn ReadView + 'a>,
}

/// Lock `reqs` (at most [`MAX_PATHS_PER_OPERATION`] paths) in `pool`,
/// reading `store` as the walk goes (see the module docs).
pub fn lock_paths<'a, S: Store + ?Sized>(
    pool: &'a LockPool,
    store: &'a S,
    reqs: &[PathLockRequest],
    wait: Wait,
) -> Result<Locked<'a>, LockError> {
    assert!(
        reqs.len() <= MAX_PATHS_PER_OPERATION,
        "an operation locks at most {MAX_PATHS_PER_OPERATION} paths, not {}",
        reqs.len()
    );
    for _ in 0..MAX_LOCK_WALK_ATTEMPTS {
        let routes = routes(store, reqs)?;
        let mut w = Walker {
            pool,
            store,
            wait,
            held: Vec::with_capacity(routes.iter().map(|r| 2 * r.names.len() + 1).sum()),
            view: None,
        };
        w.walk(&routes)?;
        if anchors_hold(w.fresh(), &routes)? {
            w.fresh();
            let view = w.view.take().expect("a fresh view");
            return Ok(Locked {
                locks: PathLocks { held: w.held },
                view,
            });
        }
    }
    let id = reqs.iter().find_map(|r| r.path.start).unwrap_or(ROOT_ID);
    Err(LockError::Moving(id))
}
