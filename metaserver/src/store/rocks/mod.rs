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

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rocksdb::{Direction, IteratorMode, ReadOptions, WriteOptions};

use super::checkpoint::{self, CheckpointFormat};
use super::{BlockId, BlockRecord, Image, LeaseRecord, ReadView, RetryWrite, Store, StoreError, WriteBatch};
use crate::inode::InodeId;

mod dir_cache;
mod generation;
mod keys;
mod read;

use dir_cache::DirCache;
use generation::Generation;
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

/// Most meta rows kept in [`DirCache`] (the table holds a handful: the
/// format record, the id counters, the retry count, the decommission set).
pub const MAX_CACHED_META_ROWS: usize = 64;

pub struct RocksStore {
    root: PathBuf,
    opts: RocksStoreOptions,
    /// The database in use; replaced (under the cache's write lock) when a
    /// snapshot is restored. Readers hold an `Arc` of the one they started on.
    gen: parking_lot::RwLock<Arc<Generation>>,
    cache: parking_lot::RwLock<DirCache>,
    /// `cache.version` and the current generation's number, published for
    /// [`read::RocksLatest`], which reads them with two atomic loads
    /// instead of taking both locks for every read (with two planners, the
    /// locks' words were the cache lines they fought over). Stored under
    /// the cache's write lock: the generation's number before the version,
    /// so a reader that loads the version first and sees one published
    /// after a restore also sees the new number.
    published_version: AtomicU64,
    published_gen: AtomicU64,
}

impl RocksStore {
    /// Open (or create) the store whose root directory is `root` (see
    /// the `generation` module for the layout).
    pub fn open(root: &Path, opts: &RocksStoreOptions) -> Result<RocksStore, StoreError> {
        std::fs::create_dir_all(root).map_err(|e| StoreError::Io(format!("create {}: {e}", root.display())))?;
        let named = generation::current(root)?;
        let number = match named {
            Some(n) => n,
            None if root.join("CURRENT").exists() => {
                return Err(StoreError::Corrupt {
                    table: "GENERATION",
                    detail: format!(
                        "{} holds a RocksDB database of the layout before generations; move it to gen-0/ and write 0 to GENERATION",
                        root.display()
                    ),
                })
            }
            None => 0,
        };
        let gen = Generation::open(root, number, opts)?;
        if named.is_none() {
            generation::set_current(root, number)?;
        }
        generation::remove_others(root, number)?;
        Ok(RocksStore {
            root: root.to_path_buf(),
            opts: opts.clone(),
            published_gen: AtomicU64::new(gen.number),
            gen: parking_lot::RwLock::new(Arc::new(gen)),
            cache: parking_lot::RwLock::new(DirCache::default()),
            published_version: AtomicU64::new(0),
        })
    }

    /// Every record of the RocksDB checkpoint at `src`, opened read-only
    /// (a memory store restoring a RocksDB member's snapshot).
    pub fn export_checkpoint(src: &Path) -> Result<Image, StoreError> {
        export_db(&Generation::open_read_only(src)?)
    }

    /// The database in use now.
    fn current(&self) -> Arc<Generation> {
        self.gen.read().clone()
    }

    fn read_opts() -> ReadOptions {
        let mut ro = ReadOptions::default();
        ro.set_verify_checksums(true);
        ro
    }

    /// Translate `batch` into RocksDB operations appended to `wb`.
    fn fill(g: &Generation, wb: &mut rocksdb::WriteBatch, batch: &WriteBatch) {
        let (cf_i, cf_d, cf_m, cf_r) = (g.cf(CF_INODE), g.cf(CF_DENTRY), g.cf(CF_META), g.cf(CF_RETRY));
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
        let cf_t = g.cf(CF_RETRY_TIME);
        for (k, v) in &batch.retry {
            match v {
                RetryWrite::Put { record: r, replaces } => {
                    if let Some(old) = replaces {
                        wb.delete_cf(cf_t, time_key(*old, k));
                    }
                    wb.put_cf(cf_r, retry_key(k), encode_value(r));
                    wb.put_cf(cf_t, time_key(r.time_ms, k), []);
                }
                RetryWrite::Delete { time_ms } => {
                    wb.delete_cf(cf_r, retry_key(k));
                    wb.delete_cf(cf_t, time_key(*time_ms, k));
                }
            }
        }
        let cf_b = g.cf(CF_BLOCK);
        for (id, v) in &batch.blocks {
            match v {
                Some(r) => wb.put_cf(cf_b, id.to_be_bytes(), encode_value(r)),
                None => wb.delete_cf(cf_b, id.to_be_bytes()),
            }
        }
        let cf_l = g.cf(CF_LEASE);
        for (holder, v) in &batch.leases {
            match v {
                Some(r) => wb.put_cf(cf_l, holder.as_bytes(), encode_value(r)),
                None => wb.delete_cf(cf_l, holder.as_bytes()),
            }
        }
        let cf_lf = g.cf(CF_LEASE_FILE);
        for ((holder, inode), held) in &batch.lease_files {
            if *held {
                wb.put_cf(cf_lf, lease_file_key(holder, *inode), []);
            } else {
                wb.delete_cf(cf_lf, lease_file_key(holder, *inode));
            }
        }
    }

    fn write(g: &Generation, wb: rocksdb::WriteBatch) -> Result<(), StoreError> {
        let mut wo = WriteOptions::default();
        wo.set_sync(false);
        g.db().write_opt(wb, &wo).map_err(io)
    }

    /// Forget every cached directory and entry (the store was replaced).
    fn clear_cache(&self, cache: &mut DirCache) {
        cache.clear();
        self.published_version.store(cache.version, Ordering::Release);
    }
}

impl Store for RocksStore {
    fn view(&self) -> Box<dyn ReadView + '_> {
        let cache = self.cache.read();
        Box::new(RocksView::new(self, self.current(), cache.version))
    }

    fn latest_view(&self) -> Box<dyn ReadView + '_> {
        Box::new(read::RocksLatest::new(self, self.current()))
    }

    fn commit(&self, batch: WriteBatch) -> Result<(), StoreError> {
        // Encode outside the lock; a restore in between (never, in practice:
        // both come from the state machine) means encoding again.
        let g = self.current();
        let mut wb = rocksdb::WriteBatch::default();
        Self::fill(&g, &mut wb, &batch);
        let mut cache = self.cache.write();
        cache.version += 1;
        let current = self.current();
        if !Arc::ptr_eq(&g, &current) {
            wb = rocksdb::WriteBatch::default();
            Self::fill(&current, &mut wb, &batch);
        }
        let written = Self::write(&current, wb);
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
        for (k, v) in &batch.meta {
            if written.is_ok() && (cache.meta.contains_key(k.as_str()) || cache.meta.len() < MAX_CACHED_META_ROWS) {
                cache.meta.insert(k.as_str().into(), v.clone());
            } else {
                cache.meta.remove(k.as_str());
            }
        }
        // Lowered whether or not the write landed: a bound may be low, never high.
        let oldest_put = batch.retry.values().filter_map(|w| match w {
            RetryWrite::Put { record, .. } => Some(record.time_ms),
            RetryWrite::Delete { .. } => None,
        });
        if let (Some(floor), Some(t)) = (cache.retry_floor_ms, oldest_put.min()) {
            cache.retry_floor_ms = Some(floor.min(t));
        }
        // Published once the write has landed, so a version a reader loads
        // never names a commit still on its way to RocksDB. (Reads take the
        // cache lock before their database read in any case.)
        self.published_version.store(cache.version, Ordering::Release);
        written
    }

    fn export(&self) -> Result<Image, StoreError> {
        export_db(&self.current())
    }

    fn import(&self, image: Image) -> Result<(), StoreError> {
        // Delete everything, then write the image, in one atomic batch.
        let mut cache = self.cache.write();
        let g = self.current();
        let mut wb = rocksdb::WriteBatch::default();
        for name in ALL_CFS {
            let cf = g.cf(name);
            let mut first = None;
            let mut last = None;
            for item in g.db().iterator_cf(cf, IteratorMode::Start) {
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
            batch.retry.insert(
                k,
                RetryWrite::Put {
                    record: v,
                    replaces: None,
                },
            );
        }
        batch.blocks.extend(image.blocks.into_iter().map(|(k, v)| (k, Some(v))));
        batch.leases.extend(image.leases.into_iter().map(|(k, v)| (k, Some(v))));
        batch
            .lease_files
            .extend(image.lease_files.into_iter().map(|k| (k, true)));
        Self::fill(&g, &mut wb, &batch);
        self.clear_cache(&mut cache);
        Self::write(&g, wb)
    }

    fn checkpoint(&self, dst: &Path, meta_keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        // RocksDB's checkpoint flushes the memtables and links the SST
        // files: consistent, and cheap whatever the namespace's size.
        let g = self.current();
        rocksdb::checkpoint::Checkpoint::new(g.db())
            .and_then(|c| c.create_checkpoint(dst))
            .map_err(io)?;
        checkpoint::sync_dir(dst)?;
        let copy = Generation::open_read_only(dst)?;
        let cf = copy.cf(CF_META);
        meta_keys
            .iter()
            .map(|k| copy.db().get_cf(cf, k.as_bytes()).map_err(io))
            .collect()
    }

    fn restore(&self, src: &Path) -> Result<(), StoreError> {
        if checkpoint::format_of(src)? == CheckpointFormat::Image {
            return self.import(checkpoint::read_image(src)?);
        }
        // A new generation of links to the checkpoint's files, opened
        // before it is made current; the old one goes with its last reader.
        let number = self.current().number + 1;
        let path = generation::path_of(&self.root, number);
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(|e| StoreError::Io(format!("remove {}: {e}", path.display())))?;
        }
        checkpoint::link_or_copy_dir(src, &path)?;
        let fresh = Arc::new(Generation::open(&self.root, number, &self.opts)?);
        generation::set_current(&self.root, number)?;
        let mut cache = self.cache.write();
        self.published_gen.store(fresh.number, Ordering::Release);
        let old = std::mem::replace(&mut *self.gen.write(), fresh);
        self.clear_cache(&mut cache);
        old.retire();
        Ok(())
    }

    fn kind(&self) -> &'static str {
        "rocksdb"
    }

    fn blocks_page(&self, after: Option<BlockId>, limit: usize) -> Result<Vec<(BlockId, BlockRecord)>, StoreError> {
        let start = after.map_or(0, |a| a.saturating_add(1)).to_be_bytes();
        let g = self.current();
        let it = g.db().iterator_cf_opt(
            g.cf(CF_BLOCK),
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
        let g = self.current();
        let it = g.db().iterator_cf_opt(
            g.cf(CF_LEASE),
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

    fn meta_page(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let g = self.current();
        let start = if after < prefix { prefix } else { after };
        let it = g.db().iterator_cf_opt(
            g.cf(CF_META),
            Self::read_opts(),
            IteratorMode::From(start.as_bytes(), Direction::Forward),
        );
        let mut out = Vec::new();
        for item in it {
            if out.len() >= limit {
                break;
            }
            let (k, v) = item.map_err(io)?;
            if !k.starts_with(prefix.as_bytes()) {
                break;
            }
            if &*k == after.as_bytes() {
                continue;
            }
            let key = String::from_utf8(k.to_vec()).map_err(|e| StoreError::Corrupt {
                table: CF_META,
                detail: e.to_string(),
            })?;
            out.push((key, v.to_vec()));
        }
        Ok(out)
    }

    fn lease_files(&self, holder: &str, limit: usize) -> Result<Vec<InodeId>, StoreError> {
        let mut prefix = holder.as_bytes().to_vec();
        prefix.push(0);
        let g = self.current();
        let it = g.db().iterator_cf_opt(
            g.cf(CF_LEASE_FILE),
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

/// Every record of `g`, read from one RocksDB snapshot.
fn export_db(g: &Generation) -> Result<Image, StoreError> {
    let snap = g.db().snapshot();
    let mut image = Image::default();
    for item in snap.iterator_cf(g.cf(CF_INODE), IteratorMode::Start) {
        let (_, v) = item.map_err(io)?;
        image.inodes.push(decode_value(CF_INODE, &v)?);
    }
    for item in snap.iterator_cf(g.cf(CF_DENTRY), IteratorMode::Start) {
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
    for item in snap.iterator_cf(g.cf(CF_META), IteratorMode::Start) {
        let (k, v) = item.map_err(io)?;
        let key = String::from_utf8(k.to_vec()).map_err(|e| StoreError::Corrupt {
            table: CF_META,
            detail: e.to_string(),
        })?;
        image.meta.push((key, v.to_vec()));
    }
    for item in snap.iterator_cf(g.cf(CF_RETRY), IteratorMode::Start) {
        let (k, v) = item.map_err(io)?;
        image.retry.push((parse_retry_key(&k)?, decode_value(CF_RETRY, &v)?));
    }
    for item in snap.iterator_cf(g.cf(CF_BLOCK), IteratorMode::Start) {
        let (k, v) = item.map_err(io)?;
        image
            .blocks
            .push((parse_id(CF_BLOCK, &k)?, decode_value(CF_BLOCK, &v)?));
    }
    for item in snap.iterator_cf(g.cf(CF_LEASE), IteratorMode::Start) {
        let (k, v) = item.map_err(io)?;
        let holder = String::from_utf8(k.to_vec()).map_err(|e| StoreError::Corrupt {
            table: CF_LEASE,
            detail: e.to_string(),
        })?;
        image.leases.push((holder, decode_value(CF_LEASE, &v)?));
    }
    for item in snap.iterator_cf(g.cf(CF_LEASE_FILE), IteratorMode::Start) {
        let (k, _) = item.map_err(io)?;
        image.lease_files.push(parse_lease_file_key(&k)?);
    }
    Ok(image)
}

#[cfg(test)]
mod tests;
