//! The database directories of a [`RocksStore`](super::RocksStore).
//!
//! A store's root holds `gen-<n>/` RocksDB directories and a `GENERATION`
//! file naming the current one. Installing a snapshot links the snapshot's
//! checkpoint into `gen-<n+1>/`, opens it, and only then rewrites
//! `GENERATION` (write to a temporary name, fsync, rename, fsync the root):
//! that rename is the commit point, so a crash leaves either the old
//! database or the new one, never a mix. Directories of other generations
//! are removed at open, and a retired generation removes its own directory
//! once the last reader of it is gone.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rocksdb::{BlockBasedOptions, Cache, ColumnFamilyDescriptor, Options, DB};

use super::{io, RocksStoreOptions, ALL_CFS};
use crate::store::checkpoint::sync_dir;
use crate::store::StoreError;

/// The file naming the current generation, in the store's root.
const GENERATION_FILE: &str = "GENERATION";
const GENERATION_DIR_PREFIX: &str = "gen-";

/// One open RocksDB database.
pub(super) struct Generation {
    /// `Some` until dropped (so `Drop` can close it before removing files).
    db: Option<DB>,
    pub(super) number: u64,
    path: PathBuf,
    retired: AtomicBool,
}

fn fs_err(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Io(format!("{what} {}: {e}", path.display()))
}

fn db_options(opts: &RocksStoreOptions) -> (Options, Vec<ColumnFamilyDescriptor>) {
    let mut db_opts = Options::default();
    db_opts.create_if_missing(true);
    db_opts.create_missing_column_families(true);
    db_opts.set_max_background_jobs(opts.max_background_jobs);
    db_opts.set_write_buffer_size(opts.write_buffer_bytes);
    db_opts.set_max_total_wal_size(opts.max_total_wal_bytes);
    db_opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
    let cache = Cache::new_lru_cache(opts.block_cache_bytes);
    let cfs = ALL_CFS
        .iter()
        .map(|name| {
            let mut block = BlockBasedOptions::default();
            block.set_block_cache(&cache);
            block.set_bloom_filter(10.0, false);
            let mut cf_opts = Options::default();
            cf_opts.set_block_based_table_factory(&block);
            cf_opts.set_write_buffer_size(opts.write_buffer_bytes);
            cf_opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
            ColumnFamilyDescriptor::new(*name, cf_opts)
        })
        .collect();
    (db_opts, cfs)
}

impl Generation {
    /// Open (or create) generation `number` of the store at `root`.
    pub(super) fn open(root: &Path, number: u64, opts: &RocksStoreOptions) -> Result<Generation, StoreError> {
        let path = path_of(root, number);
        let (db_opts, cfs) = db_options(opts);
        let db = DB::open_cf_descriptors(&db_opts, &path, cfs).map_err(io)?;
        Ok(Generation {
            db: Some(db),
            number,
            path,
            retired: AtomicBool::new(false),
        })
    }

    /// Open the database (a checkpoint) at `path` read-only; it is never
    /// removed.
    pub(super) fn open_read_only(path: &Path) -> Result<Generation, StoreError> {
        let (mut db_opts, cfs) = db_options(&RocksStoreOptions::default());
        db_opts.create_if_missing(false);
        db_opts.create_missing_column_families(false);
        let db = DB::open_cf_descriptors_read_only(&db_opts, path, cfs, false).map_err(io)?;
        Ok(Generation {
            db: Some(db),
            number: 0,
            path: path.to_path_buf(),
            retired: AtomicBool::new(false),
        })
    }

    pub(super) fn db(&self) -> &DB {
        self.db
            .as_ref()
            .expect("a generation's database is open until it is dropped")
    }

    pub(super) fn cf(&self, name: &str) -> &rocksdb::ColumnFamily {
        self.db().cf_handle(name).expect("column family created at open")
    }

    /// Remove this generation's directory once the last user drops it.
    pub(super) fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }
}

impl Drop for Generation {
    fn drop(&mut self) {
        drop(self.db.take());
        if self.retired.load(Ordering::Acquire) {
            if let Err(e) = std::fs::remove_dir_all(&self.path) {
                tracing::warn!(path = %self.path.display(), error = %e, "remove a retired store generation");
            }
        }
    }
}

/// Directory of generation `number` under `root`.
pub(super) fn path_of(root: &Path, number: u64) -> PathBuf {
    root.join(format!("{GENERATION_DIR_PREFIX}{number}"))
}

/// The current generation named in `root`, if the file exists.
pub(super) fn current(root: &Path) -> Result<Option<u64>, StoreError> {
    let path = root.join(GENERATION_FILE);
    match std::fs::read_to_string(&path) {
        Ok(s) => s.trim().parse().map(Some).map_err(|e| StoreError::Corrupt {
            table: "GENERATION",
            detail: format!("{}: {e}", path.display()),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(fs_err("read", &path, e)),
    }
}

/// Make `number` the current generation, durably and atomically.
pub(super) fn set_current(root: &Path, number: u64) -> Result<(), StoreError> {
    let tmp = root.join(format!("{GENERATION_FILE}.tmp"));
    std::fs::write(&tmp, format!("{number}\n"))
        .and_then(|_| std::fs::File::open(&tmp)?.sync_all())
        .map_err(|e| fs_err("write", &tmp, e))?;
    std::fs::rename(&tmp, root.join(GENERATION_FILE)).map_err(|e| fs_err("rename", &tmp, e))?;
    sync_dir(root)
}

/// Remove every generation directory under `root` but `keep`'s (left
/// behind by a crash during an install, or retired while still read).
pub(super) fn remove_others(root: &Path, keep: u64) -> Result<(), StoreError> {
    let keep = path_of(root, keep);
    for entry in std::fs::read_dir(root).map_err(|e| fs_err("list", root, e))? {
        let entry = entry.map_err(|e| fs_err("list", root, e))?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with(GENERATION_DIR_PREFIX) && entry.path() != keep {
            tracing::info!(path = %entry.path().display(), "removing an old store generation");
            std::fs::remove_dir_all(entry.path()).map_err(|e| fs_err("remove", &entry.path(), e))?;
        }
    }
    Ok(())
}
