//! [`DirCache`]: what every path resolution and every write of the RocksDB
//! store reads, kept in memory under the store's cache lock (the store
//! fills and updates it; see `RocksStore::commit` and `read.rs`).

use crate::inode::{Inode, InodeId};

/// Directory inodes, and the entries that lead to them, in memory: every
/// path resolution reads the same ancestors, and RocksDB point lookups of
/// them dominated the profile. An entry is cached only once the directory it
/// names is (so file entries, the bulk, stay out).
/// Coherence: `commit` writes RocksDB and updates the cache under the write
/// lock and bumps `version`; a reader that missed inserts what it read only
/// if `version` did not move meanwhile, so the cache never holds a value
/// older than a commit.
///
/// Two more things every write reads sit beside the directories: the meta
/// rows (each write read its counters from RocksDB, ~5% of a create), and a
/// lower bound on the retry table's oldest record time, so the expiry that
/// runs once per entry opens no iterator while nothing is old enough (it
/// was ~8% of a create). Both follow the same version rule.
#[derive(Default)]
pub(super) struct DirCache {
    pub(super) dirs: rustc_hash::FxHashMap<InodeId, Inode>,
    /// parent -> name -> child directory.
    pub(super) entries: rustc_hash::FxHashMap<InodeId, rustc_hash::FxHashMap<Box<str>, InodeId>>,
    pub(super) entry_count: usize,
    /// Meta rows as committed (`None`: the row is absent).
    pub(super) meta: rustc_hash::FxHashMap<Box<str>, Option<Vec<u8>>>,
    /// No retry record of the committed state is older than this (`None`:
    /// unknown). A commit lowers it to the time of any record it puts;
    /// deletes cannot lower the oldest time, so they leave it.
    pub(super) retry_floor_ms: Option<i64>,
    pub(super) version: u64,
}

impl DirCache {
    pub(super) fn entry(&self, parent: InodeId, name: &str) -> Option<InodeId> {
        self.entries.get(&parent)?.get(name).copied()
    }

    pub(super) fn forget_entry(&mut self, parent: InodeId, name: &str) {
        if let Some(m) = self.entries.get_mut(&parent) {
            if m.remove(name).is_some() {
                self.entry_count -= 1;
            }
            if m.is_empty() {
                self.entries.remove(&parent);
            }
        }
    }

    /// Forget everything cached (the store was replaced), at a new version.
    pub(super) fn clear(&mut self) {
        self.version += 1;
        self.dirs.clear();
        self.entries.clear();
        self.entry_count = 0;
        self.meta.clear();
        self.retry_floor_ms = None;
    }
}
