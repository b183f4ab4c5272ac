//! `--store rocksdb`: the namespace in RocksDB, so it is not bounded by memory.
//!
//! Column families mirror DESIGN.md §3: `inode` (id BE → record), `dentry`
//! ((parent BE, name) → child id BE; big-endian so one directory is one
//! contiguous key range in name order), `meta`, `retry`, `block` (id BE →
//! record), `lease` (holder → record) and `lease_file` ((holder, NUL,
//! inode BE) → empty). Values carry a
//! one-byte format version; a record that does not decode is reported as
//! [`StoreError::Corrupt`], never unwrapped. RocksDB's block checksums are
//! verified on every read (the default, kept explicit below).
//!
//! Commits are one RocksDB `WriteBatch`, written to the WAL without fsync: a
//! killed process loses nothing written (the WAL is in the page cache); a lost
//! machine may lose the tail, which Raft replays because the applied log id
//! is in the same batch.

use std::path::Path;

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, Direction, IteratorMode, Options, ReadOptions, WriteOptions, DB,
};

use super::{BlockId, BlockRecord, Image, LeaseRecord, ReadView, RetryWrite, Store, StoreError, WriteBatch};
use crate::inode::{Inode, InodeId};

mod keys;
mod read;

use keys::*;
pub use read::RocksView;

const CF_INODE: &str = "inode";
const CF_DENTRY: &str = "dentry";
const CF_META: &str = "meta";
const CF_RETRY: &str = "retry";
/// Index of the retry table by time: (time, retry key) -> empty. Derived: not exported.
const CF_RETRY_TIME: &str = "retry_time";
const CF_BLOCK: &str = "block";
const CF_LEASE: &str = "lease";
const CF_LEASE_FILE: &str = "lease_file";
const ALL_CFS: [&str; 8] = [
    CF_INODE,
    CF_DENTRY,
    CF_META,
    CF_RETRY,
    CF_RETRY_TIME,
    CF_BLOCK,
    CF_LEASE,
    CF_LEASE_FILE,
];
/// Version byte in front of every encoded value.
const VALUE_FORMAT_V1: u8 = 1;

/// Tunables, passed explicitly (no hidden RocksDB defaults for what matters).
#[derive(Debug, Clone)]
pub struct RocksStoreOptions {
    pub block_cache_bytes: usize,
    pub write_buffer_bytes: usize,
    pub max_background_jobs: i32,
    /// Bound on the write-ahead log: past it RocksDB flushes the column
    /// families holding the oldest log, so a restart replays at most this
    /// much (unbounded, a restart at 1M inodes replayed ~7 s of WAL).
    pub max_total_wal_bytes: u64,
}

impl Default for RocksStoreOptions {
    fn default() -> Self {
        RocksStoreOptions {
            block_cache_bytes: 256 * 1024 * 1024,
            write_buffer_bytes: 64 * 1024 * 1024,
            max_background_jobs: 2,
            max_total_wal_bytes: 64 * 1024 * 1024,
        }
    }
}

/// Most directory inodes kept in [`DirCache`].
pub const MAX_CACHED_DIRECTORIES: usize = 1 << 20;

/// Most directory entries (of directories) kept in [`DirCache`].
pub const MAX_CACHED_DIRECTORY_ENTRIES: usize = 1 << 20;

/// Directory inodes, and the entries that lead to them, in memory: every
/// path resolution reads the same ancestors, and RocksDB point lookups of
/// them dominated the profile. An entry is cached only once the directory it
/// names is (so file entries, the bulk, stay out).
/// Coherence: `commit` writes RocksDB and updates the cache under the write
/// lock and bumps `version`; a reader that missed inserts what it read only
/// if `version` did not move meanwhile, so the cache never holds a value
/// older than a commit.
#[derive(Default)]
struct DirCache {
    dirs: rustc_hash::FxHashMap<InodeId, Inode>,
    /// parent -> name -> child directory.
    entries: rustc_hash::FxHashMap<InodeId, rustc_hash::FxHashMap<Box<str>, InodeId>>,
    entry_count: usize,
    version: u64,
}

impl DirCache {
    fn entry(&self, parent: InodeId, name: &str) -> Option<InodeId> {
        self.entries.get(&parent)?.get(name).copied()
    }

    fn forget_entry(&mut self, parent: InodeId, name: &str) {
        if let Some(m) = self.entries.get_mut(&parent) {
            if m.remove(name).is_some() {
                self.entry_count -= 1;
            }
            if m.is_empty() {
                self.entries.remove(&parent);
            }
        }
    }
}

pub struct RocksStore {
    db: DB,
    cache: parking_lot::RwLock<DirCache>,
}

impl RocksStore {
    /// Open (or create) the store in `dir`.
    pub fn open(dir: &Path, opts: &RocksStoreOptions) -> Result<RocksStore, StoreError> {
        let mut db_opts = Options::default();
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        db_opts.set_max_background_jobs(opts.max_background_jobs);
        db_opts.set_write_buffer_size(opts.write_buffer_bytes);
        db_opts.set_max_total_wal_size(opts.max_total_wal_bytes);
        db_opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
        let cache = Cache::new_lru_cache(opts.block_cache_bytes);
        let cfs = ALL_CFS.iter().map(|name| {
            let mut block = BlockBasedOptions::default();
            block.set_block_cache(&cache);
            block.set_bloom_filter(10.0, false);
            let mut cf_opts = Options::default();
            cf_opts.set_block_based_table_factory(&block);
            cf_opts.set_write_buffer_size(opts.write_buffer_bytes);
            cf_opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
            ColumnFamilyDescriptor::new(*name, cf_opts)
        });
        let db = DB::open_cf_descriptors(&db_opts, dir, cfs).map_err(io)?;
        Ok(RocksStore {
            db,
            cache: parking_lot::RwLock::new(DirCache::default()),
        })
    }

    fn cf(&self, name: &str) -> &rocksdb::ColumnFamily {
        self.db.cf_handle(name).expect("column family created at open")
    }

    fn read_opts() -> ReadOptions {
        let mut ro = ReadOptions::default();
        ro.set_verify_checksums(true);
        ro
    }

    /// Translate `batch` into RocksDB operations appended to `wb`.
    fn fill(&self, wb: &mut rocksdb::WriteBatch, batch: &WriteBatch) {
        let (cf_i, cf_d, cf_m, cf_r) = (
            self.cf(CF_INODE),
            self.cf(CF_DENTRY),
            self.cf(CF_META),
            self.cf(CF_RETRY),
        );
        for (id, v) in &batch.inodes {
            match v {
                Some(inode) => {
                    assert_eq!(inode.id, *id, "inode record stored under another id");
                    wb.put_cf(cf_i, id.to_be_bytes(), encode_value(inode));
                }
                None => wb.delete_cf(cf_i, id.to_be_bytes()),
            }
        }
        for ((p, n), v) in &batch.dentries {
            match v {
                Some(c) => wb.put_cf(cf_d, dentry_key(*p, n), c.to_be_bytes()),
                None => wb.delete_cf(cf_d, dentry_key(*p, n)),
            }
        }
        for (k, v) in &batch.meta {
            match v {
                Some(v) => wb.put_cf(cf_m, k.as_bytes(), v),
                None => wb.delete_cf(cf_m, k.as_bytes()),
            }
        }
        let cf_t = self.cf(CF_RETRY_TIME);
        for (k, v) in &batch.retry {
            match v {
                RetryWrite::Put(r) => {
                    wb.put_cf(cf_r, retry_key(k), encode_value(r));
                    wb.put_cf(cf_t, time_key(r.time_ms, k), []);
                }
                RetryWrite::Delete { time_ms } => {
                    wb.delete_cf(cf_r, retry_key(k));
                    wb.delete_cf(cf_t, time_key(*time_ms, k));
                }
            }
        }
        let cf_b = self.cf(CF_BLOCK);
        for (id, v) in &batch.blocks {
            match v {
                Some(r) => wb.put_cf(cf_b, id.to_be_bytes(), encode_value(r)),
                None => wb.delete_cf(cf_b, id.to_be_bytes()),
            }
        }
        let cf_l = self.cf(CF_LEASE);
        for (holder, v) in &batch.leases {
            match v {
                Some(r) => wb.put_cf(cf_l, holder.as_bytes(), encode_value(r)),
                None => wb.delete_cf(cf_l, holder.as_bytes()),
            }
        }
        let cf_lf = self.cf(CF_LEASE_FILE);
        for ((holder, inode), held) in &batch.lease_files {
            if *held {
                wb.put_cf(cf_lf, lease_file_key(holder, *inode), []);
            } else {
                wb.delete_cf(cf_lf, lease_file_key(holder, *inode));
            }
        }
    }

    fn write(&self, wb: rocksdb::WriteBatch) -> Result<(), StoreError> {
        let mut wo = WriteOptions::default();
        wo.set_sync(false);
        self.db.write_opt(wb, &wo).map_err(io)
    }
}

impl Store for RocksStore {
    fn view(&self) -> Box<dyn ReadView + '_> {
        let cache = self.cache.read();
        Box::new(RocksView {
            store: self,
            snapshot: self.db.snapshot(),
            version: cache.version,
        })
    }

    fn commit(&self, batch: WriteBatch) -> Result<(), StoreError> {
        let mut wb = rocksdb::WriteBatch::default();
        self.fill(&mut wb, &batch);
        let mut cache = self.cache.write();
        cache.version += 1;
        let written = self.write(wb);
        // Even a failed write may have landed in part of the column families'
        // memtables: forget every inode the batch touched.
        for (id, v) in &batch.inodes {
            match v {
                Some(inode) if inode.is_dir() && written.is_ok() && cache.dirs.contains_key(id) => {
                    cache.dirs.insert(*id, inode.clone());
                }
                _ => {
                    cache.dirs.remove(id);
                }
            }
        }
        for (p, n) in batch.dentries.keys() {
            cache.forget_entry(*p, n);
        }
        written
    }

    fn export(&self) -> Result<Image, StoreError> {
        let snap = self.db.snapshot();
        let mut image = Image::default();
        for item in snap.iterator_cf(self.cf(CF_INODE), IteratorMode::Start) {
            let (_, v) = item.map_err(io)?;
            image.inodes.push(decode_value(CF_INODE, &v)?);
        }
        for item in snap.iterator_cf(self.cf(CF_DENTRY), IteratorMode::Start) {
            let (k, v) = item.map_err(io)?;
            if k.len() < 8 {
                return Err(StoreError::Corrupt {
                    table: CF_DENTRY,
                    detail: "short key".into(),
                });
            }
            let name = String::from_utf8(k[8..].to_vec()).map_err(|e| StoreError::Corrupt {
                table: CF_DENTRY,
                detail: e.to_string(),
            })?;
            image
                .dentries
                .push((parse_id(CF_DENTRY, &k[..8])?, name, parse_id(CF_DENTRY, &v)?));
        }
        for item in snap.iterator_cf(self.cf(CF_META), IteratorMode::Start) {
            let (k, v) = item.map_err(io)?;
            let key = String::from_utf8(k.to_vec()).map_err(|e| StoreError::Corrupt {
                table: CF_META,
                detail: e.to_string(),
            })?;
            image.meta.push((key, v.to_vec()));
        }
        for item in snap.iterator_cf(self.cf(CF_RETRY), IteratorMode::Start) {
            let (k, v) = item.map_err(io)?;
            image.retry.push((parse_retry_key(&k)?, decode_value(CF_RETRY, &v)?));
        }
        for item in snap.iterator_cf(self.cf(CF_BLOCK), IteratorMode::Start) {
            let (k, v) = item.map_err(io)?;
            image
                .blocks
                .push((parse_id(CF_BLOCK, &k)?, decode_value(CF_BLOCK, &v)?));
        }
        for item in snap.iterator_cf(self.cf(CF_LEASE), IteratorMode::Start) {
            let (k, v) = item.map_err(io)?;
            let holder = String::from_utf8(k.to_vec()).map_err(|e| StoreError::Corrupt {
                table: CF_LEASE,
                detail: e.to_string(),
            })?;
            image.leases.push((holder, decode_value(CF_LEASE, &v)?));
        }
        for item in snap.iterator_cf(self.cf(CF_LEASE_FILE), IteratorMode::Start) {
            let (k, _) = item.map_err(io)?;
            image.lease_files.push(parse_lease_file_key(&k)?);
        }
        Ok(image)
    }

    fn import(&self, image: Image) -> Result<(), StoreError> {
        // Delete everything, then write the image, in one atomic batch.
        let mut wb = rocksdb::WriteBatch::default();
        for name in ALL_CFS {
            let cf = self.cf(name);
            let mut first = None;
            let mut last = None;
            for item in self.db.iterator_cf(cf, IteratorMode::Start) {
                let (k, _) = item.map_err(io)?;
                if first.is_none() {
                    first = Some(k.to_vec());
                }
                last = Some(k.to_vec());
            }
            if let (Some(first), Some(mut last)) = (first, last) {
                last.push(0);
                wb.delete_range_cf(cf, first, last);
            }
        }
        let mut batch = WriteBatch::default();
        for inode in image.inodes {
            batch.inodes.insert(inode.id, Some(inode));
        }
        for (p, n, c) in image.dentries {
            batch.dentries.insert((p, n), Some(c));
        }
        for (k, v) in image.meta {
            batch.meta.insert(k, Some(v));
        }
        for (k, v) in image.retry {
            batch.retry.insert(k, RetryWrite::Put(v));
        }
        batch.blocks.extend(image.blocks.into_iter().map(|(k, v)| (k, Some(v))));
        batch.leases.extend(image.leases.into_iter().map(|(k, v)| (k, Some(v))));
        batch
            .lease_files
            .extend(image.lease_files.into_iter().map(|k| (k, true)));
        self.fill(&mut wb, &batch);
        let mut cache = self.cache.write();
        cache.version += 1;
        cache.dirs.clear();
        cache.entries.clear();
        cache.entry_count = 0;
        self.write(wb)
    }

    fn kind(&self) -> &'static str {
        "rocksdb"
    }

    fn blocks_page(&self, after: Option<BlockId>, limit: usize) -> Result<Vec<(BlockId, BlockRecord)>, StoreError> {
        let start = after.map_or(0, |a| a.saturating_add(1)).to_be_bytes();
        let it = self.db.iterator_cf_opt(
            self.cf(CF_BLOCK),
            Self::read_opts(),
            IteratorMode::From(&start, Direction::Forward),
        );
        let mut out = Vec::new();
        for item in it {
            if out.len() >= limit || after == Some(u64::MAX) {
                break;
            }
            let (k, v) = item.map_err(io)?;
            out.push((parse_id(CF_BLOCK, &k)?, decode_value(CF_BLOCK, &v)?));
        }
        Ok(out)
    }

    fn leases_page(&self, after: &str, limit: usize) -> Result<Vec<(String, LeaseRecord)>, StoreError> {
        let it = self.db.iterator_cf_opt(
            self.cf(CF_LEASE),
            Self::read_opts(),
            IteratorMode::From(after.as_bytes(), Direction::Forward),
        );
        let mut out = Vec::new();
        for item in it {
            if out.len() >= limit {
                break;
            }
            let (k, v) = item.map_err(io)?;
            if &*k == after.as_bytes() {
                continue;
            }
            let holder = String::from_utf8(k.to_vec()).map_err(|e| StoreError::Corrupt {
                table: CF_LEASE,
                detail: e.to_string(),
            })?;
            out.push((holder, decode_value(CF_LEASE, &v)?));
        }
        Ok(out)
    }

    fn lease_files(&self, holder: &str, limit: usize) -> Result<Vec<InodeId>, StoreError> {
        let mut prefix = holder.as_bytes().to_vec();
        prefix.push(0);
        let it = self.db.iterator_cf_opt(
            self.cf(CF_LEASE_FILE),
            Self::read_opts(),
            IteratorMode::From(&prefix, Direction::Forward),
        );
        let mut out = Vec::new();
        for item in it {
            let (k, _) = item.map_err(io)?;
            if out.len() >= limit || !k.starts_with(&prefix) {
                break;
            }
            out.push(parse_lease_file_key(&k)?.1);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inode::Inode;
    use raftfs_proto::Permission;

    fn dir(id: InodeId, children: u64) -> Inode {
        let mut d = Inode::new_dir(id, crate::inode::ROOT_ID, Permission(0o755), "u", "g", 1);
        d.kind = crate::inode::InodeKind::Directory { children, quota: None };
        d
    }

    fn put(s: &RocksStore, i: Inode) {
        let mut b = WriteBatch::default();
        b.inodes.insert(i.id, Some(i));
        s.commit(b).expect("commit");
    }

    #[test]
    fn directory_cache_follows_commits() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let s = RocksStore::open(tmp.path(), &RocksStoreOptions::default()).expect("open");
        put(&s, dir(20000, 1));
        assert_eq!(s.inode(20000).unwrap().unwrap().children(), 1); // now cached
        put(&s, dir(20000, 2));
        assert_eq!(
            s.inode(20000).unwrap().unwrap().children(),
            2,
            "a commit updates the cached copy"
        );
        let mut b = WriteBatch::default();
        b.inodes.insert(20000, None);
        s.commit(b).unwrap();
        assert_eq!(s.inode(20000).unwrap(), None, "a delete evicts");
        put(&s, dir(20001, 5));
        assert_eq!(s.inode(20001).unwrap().unwrap().children(), 5);
        s.import(Image {
            inodes: vec![dir(20001, 9)],
            ..Image::default()
        })
        .unwrap();
        assert_eq!(
            s.inode(20001).unwrap().unwrap().children(),
            9,
            "an import clears the cache"
        );
    }

    fn link(s: &RocksStore, parent: InodeId, name: &str, child: Option<InodeId>) {
        let mut b = WriteBatch::default();
        b.dentries.insert((parent, name.into()), child);
        s.commit(b).expect("commit");
    }

    #[test]
    fn entry_cache_follows_commits() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let s = RocksStore::open(tmp.path(), &RocksStoreOptions::default()).expect("open");
        put(&s, dir(20000, 1));
        put(&s, dir(20001, 0));
        link(&s, 20000, "d", Some(20001));
        s.inode(20001).unwrap(); // the directory is cached ...
        for _ in 0..2 {
            assert_eq!(s.child(20000, "d").unwrap(), Some(20001)); // ... and then its entry
        }
        assert_eq!(s.cache.read().entry(20000, "d"), Some(20001), "entry cached");
        link(&s, 20000, "d", None);
        assert_eq!(s.child(20000, "d").unwrap(), None, "an unlink evicts");
        link(&s, 20000, "d", Some(20002));
        assert_eq!(s.child(20000, "d").unwrap(), Some(20002), "a relink is seen");
        assert_eq!(
            s.cache.read().entry(20000, "d"),
            None,
            "entries of uncached inodes stay out"
        );
    }

    #[test]
    fn a_view_sees_one_committed_state() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let s = RocksStore::open(tmp.path(), &RocksStoreOptions::default()).expect("open");
        put(&s, dir(20000, 1));
        put(&s, dir(20001, 0));
        link(&s, 20000, "d", Some(20001));
        // Warm the cache, so the view could be tempted to read it.
        s.inode(20001).unwrap();
        s.child(20000, "d").unwrap();
        let v = s.view();
        // A commit on another thread removes the entry and its inode at once.
        std::thread::scope(|t| {
            t.spawn(|| {
                let mut b = WriteBatch::default();
                b.dentries.insert((20000, "d".into()), None);
                b.inodes.insert(20001, None);
                b.inodes.insert(20000, Some(dir(20000, 0)));
                s.commit(b).expect("commit");
            });
        });
        assert_eq!(
            v.child(20000, "d").unwrap(),
            Some(20001),
            "the view predates the delete"
        );
        assert!(v.inode(20001).unwrap().is_some(), "... so the inode is there too");
        assert_eq!(v.inode(20000).unwrap().unwrap().children(), 1);
        assert_eq!(v.children(20000, "", 10).unwrap().len(), 1);
        drop(v);
        let now = s.view();
        assert_eq!(now.child(20000, "d").unwrap(), None);
        assert_eq!(now.inode(20001).unwrap(), None);
        assert_eq!(now.inode(20000).unwrap().unwrap().children(), 0);
    }
}
