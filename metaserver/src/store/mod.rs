//! The storage trait under the namespace (DESIGN.md §3), and its two
//! implementations: [`MemStore`] (`--store memory`) and [`RocksStore`]
//! (`--store rocksdb`, the default).
//!
//! The namespace logic is written once against [`Store`]; the trait never
//! mentions RocksDB (TiKV's rule for engine traits). A [`WriteBatch`] is applied
//! atomically: either all of it is visible afterwards or none of it, which is
//! what makes "one WriteBatch per applied Raft batch, including the applied
//! log id" crash-safe.
//!
//! Reads go through a [`Store::view`]: one committed state for the whole
//! sequence of reads an operation makes (a path resolution, a listing), as
//! HDFS readers under the namesystem read lock see. The fault harness
//! (`raftfs bench faults`) caught the earlier RocksDB behaviour, where each
//! read saw the latest commit, answering a getFileInfo racing a delete with
//! "dentry points at missing inode".
//! Calls made on a store itself (not a view) read the latest commit each.

pub mod checkpoint;
mod memory;
mod rocks;

use std::collections::BTreeMap;
use std::path::Path;

use compact_str::CompactString;

pub use memory::MemStore;
pub use rocks::{RocksStore, RocksStoreOptions};

use crate::inode::{Inode, InodeId};

/// Errors from a store's own I/O.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("store I/O: {0}")]
    Io(String),
    #[error("corrupt record in {table}: {detail}")]
    Corrupt { table: &'static str, detail: String },
}

impl From<StoreError> for raftfs_proto::FsError {
    fn from(e: StoreError) -> Self {
        raftfs_proto::FsError::Storage(e.to_string())
    }
}

/// A retry-cache record: the first result of a non-idempotent call.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RetryRecord {
    /// Log time (ms) at which the call was applied; expiry counts from it.
    pub time_ms: i64,
    /// bincode of the call's `OpResult`.
    pub result: Vec<u8>,
}

/// (client id, call id).
pub type RetryKey = (String, u64);

/// A block id (HDFS allocates them sequentially from 2^30).
pub type BlockId = u64;

/// A row of the block table (DESIGN.md §3): which file a block belongs to
/// and what its replicas must look like. Derived from the file inodes by
/// [`crate::namespace::Overlay`], so it always agrees with them; the block
/// manager loads it at start and follows its changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BlockRecord {
    pub inode: InodeId,
    pub gen_stamp: u64,
    pub num_bytes: u64,
    /// The file's replication factor.
    pub replication: u16,
    /// The last block of a file being written: replicas may differ in length.
    pub under_construction: bool,
}

/// A row of the lease table: a client that holds files open for writing
/// (HDFS `Lease`). Derived by the overlay from the files' lease holders
/// (`open_files`), renewed by the holder; gone when it holds no file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LeaseRecord {
    /// Log time (ms) of the last renewal (or of taking a file).
    pub renewed_ms: i64,
    pub open_files: u64,
}

/// A pending change to the retry table. A delete names the record's time,
/// and a put the time of the committed record it overwrites, so that
/// stores can keep their by-time index (for expiry) in step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryWrite {
    /// `replaces`: the time of the committed record for this key, if one is
    /// overwritten (a call re-run after its record left the retry window
    /// but before expiry dropped it).
    Put {
        record: RetryRecord,
        replaces: Option<i64>,
    },
    Delete {
        time_ms: i64,
    },
}

/// Read access to committed state. Implemented by every store and by the
/// planning overlay.
pub trait ReadView {
    fn inode(&self, id: InodeId) -> Result<Option<Inode>, StoreError>;
    fn child(&self, parent: InodeId, name: &str) -> Result<Option<InodeId>, StoreError>;
    /// Children of `parent` named strictly after `start_after`, in name
    /// (byte) order, at most `limit` of them.
    fn children(&self, parent: InodeId, start_after: &str, limit: usize) -> Result<Vec<(String, InodeId)>, StoreError>;
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;
    fn retry(&self, key: &RetryKey) -> Result<Option<RetryRecord>, StoreError>;
    /// Retry records applied before `before_ms`, oldest first (ties in key
    /// order), at most `limit`.
    fn retry_older_than(&self, before_ms: i64, limit: usize) -> Result<Vec<(i64, RetryKey)>, StoreError>;
    fn block(&self, id: BlockId) -> Result<Option<BlockRecord>, StoreError>;
    fn lease(&self, holder: &str) -> Result<Option<LeaseRecord>, StoreError>;

    /// Walk `names` down from the last inode of `inodes` (the start of a
    /// path resolution), pushing the inode of each name in turn, until a
    /// name is missing, a file has names left below it, or every name is
    /// walked. One call per resolution, so a store may walk its own records
    /// without a lookup per call (the memory store keeps its hand on the
    /// directory it is in: a 17-deep path looked each directory up twice).
    /// The default uses [`ReadView::child`] and [`ReadView::inode`].
    fn walk(&self, names: &[CompactString], inodes: &mut Vec<Inode>) -> Result<Walk, StoreError> {
        walk_each(self, names, inodes)
    }
}

/// [`ReadView::walk`] with one [`ReadView::child`] and one
/// [`ReadView::inode`] per name (the default, and how a store goes on past
/// the part it walks faster).
pub fn walk_each<V: ReadView + ?Sized>(
    view: &V,
    names: &[CompactString],
    inodes: &mut Vec<Inode>,
) -> Result<Walk, StoreError> {
    for (i, name) in names.iter().enumerate() {
        let cur = inodes.last().expect("a walk starts at an inode");
        if !cur.is_dir() {
            return Ok(Walk::ThroughFile);
        }
        let parent = cur.id;
        let Some(id) = view.child(parent, name)? else {
            return Ok(Walk::Ended);
        };
        match view.inode(id)? {
            Some(inode) => inodes.push(inode),
            None => {
                return Ok(Walk::Dangling {
                    parent,
                    name: i,
                    child: id,
                })
            }
        }
    }
    Ok(Walk::Ended)
}

/// How a [`ReadView::walk`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// Every name was walked, or one was missing.
    Ended,
    /// A file was reached with names left below it.
    ThroughFile,
    /// Name `name` (an index into the names) of `parent` leads to inode
    /// `child`, which does not exist: the store is corrupt.
    Dangling {
        parent: InodeId,
        name: usize,
        child: InodeId,
    },
}

/// A store: committed state plus atomic batch writes.
pub trait Store: ReadView + Send + Sync + 'static {
    /// A view for one operation's sequence of reads. Memory: under one read
    /// lock; RocksDB: a snapshot. Either way the reads see one committed
    /// state, never half of a concurrent commit. A view must be dropped
    /// before [`Store::commit`] on the same thread.
    fn view(&self) -> Box<dyn ReadView + '_>;

    /// A view whose reads each see the latest commit, for a caller that
    /// holds locks on the keys it reads (the leader's plans): a locked key's
    /// latest value is its current one, so no snapshot is needed, and the
    /// RocksDB store's caches (which serve only views no commit has passed)
    /// serve every read while other writes commit. Values of keys the
    /// caller has not locked may come from different commits. Memory: the
    /// same as [`Store::view`] (its read lock keeps commits out while held).
    fn latest_view(&self) -> Box<dyn ReadView + '_>;

    /// Apply `batch` atomically. Not synced: the Raft log is the durable
    /// record, and the applied log id travels in the same batch.
    fn commit(&self, batch: WriteBatch) -> Result<(), StoreError>;

    /// A consistent copy of every record, for snapshots.
    fn export(&self) -> Result<Image, StoreError>;

    /// Replace all state by `image`.
    fn import(&self, image: Image) -> Result<(), StoreError>;

    /// Write a consistent copy of the whole store into `dst` (a directory
    /// that must not exist yet) in the store's own format (see
    /// [`checkpoint`]), and return the values `meta_keys` have in that copy.
    fn checkpoint(&self, dst: &Path, meta_keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, StoreError>;

    /// Replace all state by the checkpoint in `src`, of either format;
    /// `src` is left as it was (files are linked or copied from it).
    fn restore(&self, src: &Path) -> Result<(), StoreError>;

    /// Human-readable name: "memory" or "rocksdb".
    fn kind(&self) -> &'static str;

    /// Block table rows with ids after `after` (all when `None`), in id order, at most `limit`.
    fn blocks_page(&self, after: Option<BlockId>, limit: usize) -> Result<Vec<(BlockId, BlockRecord)>, StoreError>;

    /// Lease holders named after `after`, in name order, at most `limit`.
    fn leases_page(&self, after: &str, limit: usize) -> Result<Vec<(String, LeaseRecord)>, StoreError>;

    /// Files `holder` has open, in id order, at most `limit`.
    fn lease_files(&self, holder: &str, limit: usize) -> Result<Vec<InodeId>, StoreError>;

    /// Meta rows whose keys start with `prefix` and sort after `after`, in
    /// key order, at most `limit` (the delegation token sweep).
    fn meta_page(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<(String, Vec<u8>)>, StoreError>;
}

/// Pending writes; `None` deletes. Later writes to one key replace earlier ones.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WriteBatch {
    pub inodes: BTreeMap<InodeId, Option<Inode>>,
    pub dentries: BTreeMap<(InodeId, String), Option<InodeId>>,
    pub meta: BTreeMap<String, Option<Vec<u8>>>,
    pub retry: BTreeMap<RetryKey, RetryWrite>,
    pub blocks: BTreeMap<BlockId, Option<BlockRecord>>,
    pub leases: BTreeMap<String, Option<LeaseRecord>>,
    /// (holder, file) → held (true) or released (false).
    pub lease_files: BTreeMap<(String, InodeId), bool>,
}

impl WriteBatch {
    pub fn is_empty(&self) -> bool {
        self.inodes.is_empty()
            && self.dentries.is_empty()
            && self.meta.is_empty()
            && self.retry.is_empty()
            && self.blocks.is_empty()
            && self.leases.is_empty()
            && self.lease_files.is_empty()
    }
}

/// Every record of a store, in key order (a snapshot's payload).
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Image {
    pub inodes: Vec<Inode>,
    pub dentries: Vec<(InodeId, String, InodeId)>,
    pub meta: Vec<(String, Vec<u8>)>,
    pub retry: Vec<(RetryKey, RetryRecord)>,
    pub blocks: Vec<(BlockId, BlockRecord)>,
    pub leases: Vec<(String, LeaseRecord)>,
    pub lease_files: Vec<(String, InodeId)>,
}

impl<T: ReadView + ?Sized> ReadView for &T {
    fn inode(&self, id: InodeId) -> Result<Option<Inode>, StoreError> {
        (**self).inode(id)
    }
    fn child(&self, parent: InodeId, name: &str) -> Result<Option<InodeId>, StoreError> {
        (**self).child(parent, name)
    }
    fn children(&self, parent: InodeId, start_after: &str, limit: usize) -> Result<Vec<(String, InodeId)>, StoreError> {
        (**self).children(parent, start_after, limit)
    }
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        (**self).meta(key)
    }
    fn retry(&self, key: &RetryKey) -> Result<Option<RetryRecord>, StoreError> {
        (**self).retry(key)
    }
    fn retry_older_than(&self, before_ms: i64, limit: usize) -> Result<Vec<(i64, RetryKey)>, StoreError> {
        (**self).retry_older_than(before_ms, limit)
    }
    fn block(&self, id: BlockId) -> Result<Option<BlockRecord>, StoreError> {
        (**self).block(id)
    }
    fn lease(&self, holder: &str) -> Result<Option<LeaseRecord>, StoreError> {
        (**self).lease(holder)
    }
    fn walk(&self, names: &[CompactString], inodes: &mut Vec<Inode>) -> Result<Walk, StoreError> {
        (**self).walk(names, inodes)
    }
}

impl<T: ReadView + ?Sized> ReadView for std::sync::Arc<T> {
    fn inode(&self, id: InodeId) -> Result<Option<Inode>, StoreError> {
        (**self).inode(id)
    }
    fn child(&self, parent: InodeId, name: &str) -> Result<Option<InodeId>, StoreError> {
        (**self).child(parent, name)
    }
    fn children(&self, parent: InodeId, start_after: &str, limit: usize) -> Result<Vec<(String, InodeId)>, StoreError> {
        (**self).children(parent, start_after, limit)
    }
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        (**self).meta(key)
    }
    fn retry(&self, key: &RetryKey) -> Result<Option<RetryRecord>, StoreError> {
        (**self).retry(key)
    }
    fn retry_older_than(&self, before_ms: i64, limit: usize) -> Result<Vec<(i64, RetryKey)>, StoreError> {
        (**self).retry_older_than(before_ms, limit)
    }
    fn block(&self, id: BlockId) -> Result<Option<BlockRecord>, StoreError> {
        (**self).block(id)
    }
    fn lease(&self, holder: &str) -> Result<Option<LeaseRecord>, StoreError> {
        (**self).lease(holder)
    }
    fn walk(&self, names: &[CompactString], inodes: &mut Vec<Inode>) -> Result<Walk, StoreError> {
        (**self).walk(names, inodes)
    }
}

impl<T: Store + ?Sized> Store for std::sync::Arc<T> {
    fn view(&self) -> Box<dyn ReadView + '_> {
        (**self).view()
    }
    fn latest_view(&self) -> Box<dyn ReadView + '_> {
        (**self).latest_view()
    }
    fn commit(&self, batch: WriteBatch) -> Result<(), StoreError> {
        (**self).commit(batch)
    }
    fn export(&self) -> Result<Image, StoreError> {
        (**self).export()
    }
    fn import(&self, image: Image) -> Result<(), StoreError> {
        (**self).import(image)
    }
    fn checkpoint(&self, dst: &Path, meta_keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        (**self).checkpoint(dst, meta_keys)
    }
    fn restore(&self, src: &Path) -> Result<(), StoreError> {
        (**self).restore(src)
    }
    fn kind(&self) -> &'static str {
        (**self).kind()
    }
    fn blocks_page(&self, after: Option<BlockId>, limit: usize) -> Result<Vec<(BlockId, BlockRecord)>, StoreError> {
        (**self).blocks_page(after, limit)
    }
    fn leases_page(&self, after: &str, limit: usize) -> Result<Vec<(String, LeaseRecord)>, StoreError> {
        (**self).leases_page(after, limit)
    }
    fn lease_files(&self, holder: &str, limit: usize) -> Result<Vec<InodeId>, StoreError> {
        (**self).lease_files(holder, limit)
    }
    fn meta_page(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        (**self).meta_page(prefix, after, limit)
    }
}
