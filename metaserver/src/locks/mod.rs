//! The leader's lock manager for `--exec leader` (DESIGN.md §4; Alluxio's
//! `InodeLockManager` and Bilibili's fine-grained NameNode locking, see
//! REFERENCE.md).
//!
//! * [`LockPool`] (`pool.rs`): reader-writer locks keyed by inode id
//!   ([`LockKey::Inode`]) or directory entry ([`LockKey::Edge`]: parent id
//!   and name), created on first use, reference-counted before they are
//!   locked, evicted when unreferenced between a high and a low watermark.
//! * [`lock_paths`] (`path_locks.rs`): an operation's paths locked
//!   top-down in READ / WRITE_INODE / WRITE_EDGE ([`PathMode`]), held in a
//!   [`PathLocks`] until the operation's delta is applied.
//!
//! ```text
//!   create /a/b/c (b exists, c does not):
//!     R[/]  R[/→a]  R[a]  R[a→b]  R[b]  W[b→c]
//!   rename /a/x → /a/y/z: the shared prefix once, then each rest in name order
//!     R[/]  R[/→a]  R[a]  |  W[a→x] W[x]  |  R[a→y] R[y] W[y→z]
//! ```
//!
//! What the locks protect: an edge lock, whether the name exists and which
//! inode it names; an inode lock, the inode's own fields (permission,
//! owner, blocks, lease, quota settings). A parent's mtime, its child count
//! and quota usage are mergeable deltas applied under READ, so creates of
//! different names in one directory run in parallel.
//!
//! # Why this cannot deadlock
//!
//! Order every lock key by the path that reaches it now: an edge by the
//! path of the name it holds, an inode by its path, an edge before the
//! inode it leads to, and paths compared name by name (a path before the
//! paths below it). Every operation takes its locks in increasing order of
//! that relation:
//! * one path is walked from the root down, each name's edge and then its
//!   inode: each key's path extends the previous one;
//! * several paths (a rename's two; a directory a plan must hold in WRITE)
//!   are walked as one trie, depth first: a shared prefix is taken once,
//!   in the stronger of the modes each step needs, and where the paths
//!   part, the subtree of the smaller next name is walked to its end
//!   before the next one: every key of the first sorts before every key
//!   of the second;
//! * a missing edge that needs WRITE was the last key taken under READ; it
//!   is released and retaken, which keeps the order (nothing greater is held);
//! * a path named by inode id is walked through its ancestors' names like
//!   any other; if the inode moved before it was locked, every lock is
//!   released and the walk starts over.
//!
//! The order is stable for the keys involved: a key's path changes only
//! when one of its ancestors is renamed, and a rename needs WRITE on that
//! ancestor's edge, which everyone below it holds in READ (or WRITE) while
//! they hold or wait for the key. So every waiter holds only keys smaller
//! than the one it waits for, and a cycle of waiters would need a key
//! smaller than itself. No lock is taken while a store or Raft call that
//! waits on another operation is in progress: locks are taken first, then
//! the plan reads the store, then the delta is proposed and applied, then
//! the locks are released.
//!
//! Everything below a WRITE-locked edge counts as write-locked (a
//! recursive delete or rename of a directory takes no lock per descendant):
//! any other operation reaching below it must first take that edge.

mod path_locks;
mod pool;

pub use path_locks::{
    lock_paths, LockError, Locked, PathLockRequest, PathLocks, PathMode, Wait, MAX_LOCK_WALK_ATTEMPTS,
    MAX_PATHS_PER_OPERATION,
};
pub use pool::{
    Busy, HeldLock, LockKey, LockMode, LockPool, LOCK_POOL_HIGH_WATERMARK_ENTRIES, LOCK_POOL_LOW_WATERMARK_ENTRIES,
    MAX_THREAD_CACHED_ENTRIES,
};
