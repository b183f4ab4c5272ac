//! Reads of the RocksDB store: of the live store (each read sees the latest
//! commit) or of a [`RocksView`], one RocksDB snapshot paired with the
//! directory cache's version, so a sequence of reads sees one committed
//! state and the cache serves it only while no commit has moved past it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use compact_str::CompactString;
use rocksdb::{Direction, IteratorMode, ReadOptions};

use super::generation::Generation;
use super::keys::*;
use super::{
    DirCache, RocksStore, CF_BLOCK, CF_DENTRY, CF_INODE, CF_LEASE, CF_META, CF_RETRY, CF_RETRY_TIME,
    MAX_CACHED_DIRECTORIES, MAX_CACHED_DIRECTORY_ENTRIES, MAX_CACHED_META_ROWS,
};
use crate::inode::{Inode, InodeId};
use crate::store::{walk_each, BlockId, BlockRecord, LeaseRecord, ReadView, RetryKey, RetryRecord, StoreError, Walk};

/// Where a read looks: a database generation, live or at one snapshot of
/// it, and the cache version that matches (taken with the generation under
/// the cache lock, so a restore in between is seen as a version change).
#[derive(Clone, Copy)]
pub(super) struct At<'s> {
    gen: &'s Generation,
    snapshot: Option<&'s rocksdb::Snapshot<'s>>,
    /// Options of a point read here (checksums verified, the snapshot set),
    /// built once per view: building them per read, a C++ allocation and
    /// free each time, was a share of every lookup.
    opts: &'s ReadOptions,
    /// The cache may serve (and learn from) this read only at this version.
    version: u64,
}

impl RocksStore {
    fn opts_at(at: At<'_>) -> ReadOptions {
        let mut ro = Self::read_opts();
        if let Some(s) = at.snapshot {
            ro.set_snapshot(s);
        }
        ro
    }

    fn get_at<'a>(&self, at: At<'a>, cf: &str, key: &[u8]) -> Result<Option<rocksdb::DBPinnableSlice<'a>>, StoreError> {
        at.gen.db().get_pinned_cf_opt(at.gen.cf(cf), key, at.opts).map_err(io)
    }

    /// `f` on the cache, if the cache may serve a read at `at` (no commit
    /// has moved it past `at`'s version). A fill after a miss checks the
    /// same version under the write lock.
    fn read_cache<T>(&self, at: At<'_>, f: impl FnOnce(&DirCache) -> Option<T>) -> Option<T> {
        let cache = self.cache.read();
        if cache.version == at.version {
            f(&cache)
        } else {
            None
        }
    }

    /// Run `read` against the live database, at the current cache version.
    fn live<R>(&self, read: impl FnOnce(At<'_>) -> R) -> R {
        let (gen, version) = {
            let cache = self.cache.read();
            (self.current(), cache.version)
        };
        read(At {
            gen: &gen,
            snapshot: None,
            opts: &Self::read_opts(),
            version,
        })
    }

    fn inode_at(&self, at: At<'_>, id: InodeId) -> Result<Option<Inode>, StoreError> {
        if let Some(d) = self.read_cache(at, |c| c.dirs.get(&id).cloned()) {
            return Ok(Some(d));
        }
        match self.get_at(at, CF_INODE, &id.to_be_bytes())? {
            None => Ok(None),
            Some(v) => {
                let inode: Inode = decode_value(CF_INODE, &v)?;
                if inode.id != id {
                    return Err(StoreError::Corrupt {
                        table: CF_INODE,
                        detail: format!("record {} stored under {id}", inode.id),
                    });
                }
                if inode.is_dir() {
                    let mut cache = self.cache.write();
                    if cache.version == at.version && cache.dirs.len() < MAX_CACHED_DIRECTORIES {
                        cache.dirs.insert(id, inode.clone());
                    }
                }
                Ok(Some(inode))
            }
        }
    }

    fn child_at(&self, at: At<'_>, parent: InodeId, name: &str) -> Result<Option<InodeId>, StoreError> {
        if let Some(c) = self.read_cache(at, |c| c.entry(parent, name)) {
            return Ok(Some(c));
        }
        let child = match self.get_at(at, CF_DENTRY, &dentry_key(parent, name))? {
            None => return Ok(None),
            Some(v) => parse_id(CF_DENTRY, &v)?,
        };
        if self.cache.read().dirs.contains_key(&child) {
            let mut cache = self.cache.write();
            if cache.version == at.version
                && cache.entry_count < MAX_CACHED_DIRECTORY_ENTRIES
                && cache
                    .entries
                    .entry(parent)
                    .or_default()
                    .insert(name.into(), child)
                    .is_none()
            {
                cache.entry_count += 1;
            }
        }
        Ok(Some(child))
    }

    fn children_at(
        &self,
        at: At<'_>,
        parent: InodeId,
        start_after: &str,
        limit: usize,
    ) -> Result<Vec<(String, InodeId)>, StoreError> {
        let prefix = parent.to_be_bytes();
        let from = dentry_key(parent, start_after);
        let mut ro = Self::opts_at(at);
        let mut upper = prefix.to_vec();
        // parent + 1 bounds the scan; parent is never u64::MAX (ids are allocated upwards from 16386).
        upper.copy_from_slice(&(parent + 1).to_be_bytes());
        ro.set_iterate_upper_bound(upper);
        let it = at
            .gen
            .db()
            .iterator_cf_opt(at.gen.cf(CF_DENTRY), ro, IteratorMode::From(&from, Direction::Forward));
        let mut out = Vec::new();
        for item in it {
            let (k, v) = item.map_err(io)?;
            if !k.starts_with(&prefix) {
                break;
            }
            let name = std::str::from_utf8(&k[8..]).map_err(|e| StoreError::Corrupt {
                table: CF_DENTRY,
                detail: e.to_string(),
            })?;
            if !start_after.is_empty() && name == start_after {
                continue;
            }
            out.push((name.to_string(), parse_id(CF_DENTRY, &v)?));
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    fn retry_older_than_at(
        &self,
        at: At<'_>,
        before_ms: i64,
        limit: usize,
    ) -> Result<Vec<(i64, RetryKey)>, StoreError> {
        if self
            .read_cache(at, |c| c.retry_floor_ms.filter(|floor| before_ms <= *floor))
            .is_some()
        {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        // The oldest time in the table, once the scan has seen it: the
        // first record not taken when none was taken (i64::MAX: none at all).
        let mut oldest = None;
        let it = at
            .gen
            .db()
            .iterator_cf_opt(at.gen.cf(CF_RETRY_TIME), Self::opts_at(at), IteratorMode::Start);
        let mut ended = true;
        for item in it {
            let (k, _) = item.map_err(io)?;
            if k.len() < 8 || out.len() >= limit {
                ended = false;
                break;
            }
            let time = (u64::from_be_bytes(k[..8].try_into().expect("8 bytes")) ^ (1 << 63)) as i64;
            if time >= before_ms {
                ended = false;
                if out.is_empty() {
                    oldest = Some(time);
                }
                break;
            }
            out.push((time, parse_retry_key(&k[8..])?));
        }
        if ended && out.is_empty() {
            oldest = Some(i64::MAX);
        }
        if let Some(oldest) = oldest {
            let mut cache = self.cache.write();
            if cache.version == at.version {
                cache.retry_floor_ms = Some(oldest);
            }
        }
        Ok(out)
    }

    /// [`ReadView::walk`]: the cached directories of the path under one
    /// cache lock (a lock per lookup was two per path component), then the
    /// rest one lookup at a time.
    fn walk_at<V: ReadView + ?Sized>(
        &self,
        view: &V,
        at: At<'_>,
        names: &[CompactString],
        inodes: &mut Vec<Inode>,
    ) -> Result<Walk, StoreError> {
        let cached = self
            .read_cache(at, |cache| {
                let mut n = 0;
                for name in names {
                    let cur = inodes.last().expect("a walk starts at an inode");
                    let Some(dir) = cache.entry(cur.id, name).and_then(|id| cache.dirs.get(&id)) else {
                        break;
                    };
                    inodes.push(dir.clone());
                    n += 1;
                }
                Some(n)
            })
            .unwrap_or(0);
        Ok(match walk_each(view, &names[cached..], inodes)? {
            Walk::Dangling { parent, name, child } => Walk::Dangling {
                parent,
                name: name + cached,
                child,
            },
            end => end,
        })
    }

    fn meta_at(&self, at: At<'_>, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(v) = self.read_cache(at, |c| c.meta.get(key).cloned()) {
            return Ok(v);
        }
        let value = self.get_at(at, CF_META, key.as_bytes())?.map(|v| v.to_vec());
        let mut cache = self.cache.write();
        if cache.version == at.version && cache.meta.len() < MAX_CACHED_META_ROWS {
            cache.meta.insert(key.into(), value.clone());
        }
        Ok(value)
    }

    fn decoded_at<T: serde::de::DeserializeOwned>(
        &self,
        at: At<'_>,
        cf: &'static str,
        key: &[u8],
    ) -> Result<Option<T>, StoreError> {
        match self.get_at(at, cf, key)? {
            None => Ok(None),
            Some(v) => decode_value(cf, &v).map(Some),
        }
    }
}

/// Reads of the live store: each read sees the latest commit (for reads
/// that need no consistency across calls; planning and client reads go
/// through [`crate::store::Store::view`]).
impl ReadView for RocksStore {
    fn inode(&self, id: InodeId) -> Result<Option<Inode>, StoreError> {
        self.live(|at| self.inode_at(at, id))
    }
    fn child(&self, parent: InodeId, name: &str) -> Result<Option<InodeId>, StoreError> {
        self.live(|at| self.child_at(at, parent, name))
    }
    fn children(&self, parent: InodeId, start_after: &str, limit: usize) -> Result<Vec<(String, InodeId)>, StoreError> {
        self.live(|at| self.children_at(at, parent, start_after, limit))
    }
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.live(|at| self.meta_at(at, key))
    }
    fn retry(&self, key: &RetryKey) -> Result<Option<RetryRecord>, StoreError> {
        self.live(|at| self.decoded_at(at, CF_RETRY, &retry_key(key)))
    }
    fn retry_older_than(&self, before_ms: i64, limit: usize) -> Result<Vec<(i64, RetryKey)>, StoreError> {
        self.live(|at| self.retry_older_than_at(at, before_ms, limit))
    }
    fn block(&self, id: BlockId) -> Result<Option<BlockRecord>, StoreError> {
        self.live(|at| self.decoded_at(at, CF_BLOCK, &id.to_be_bytes()))
    }
    fn lease(&self, holder: &str) -> Result<Option<LeaseRecord>, StoreError> {
        self.live(|at| self.decoded_at(at, CF_LEASE, holder.as_bytes()))
    }
    fn walk(&self, names: &[CompactString], inodes: &mut Vec<Inode>) -> Result<Walk, StoreError> {
        self.live(|at| self.walk_at(self, at, names, inodes))
    }
}

/// One committed state: a RocksDB snapshot taken under the cache lock, so it
/// and the cache version it records match (a commit writes RocksDB and
/// bumps the version under that lock). The directory cache serves the view
/// only while no commit has moved it past that version.
pub struct RocksView<'a> {
    store: &'a RocksStore,
    /// Point-read options naming `snapshot` (declared first, so dropped
    /// before the snapshot they point at).
    opts: ReadOptions,
    snapshot: GenSnapshot,
    version: u64,
}

type DbSnapshot<'a> = rocksdb::Snapshot<'a>;

self_cell::self_cell!(
    /// A RocksDB snapshot together with the generation it is of, which it
    /// keeps open (a restore may replace the store's generation meanwhile).
    struct GenSnapshot {
        owner: Arc<Generation>,
        #[covariant]
        dependent: DbSnapshot,
    }
);

impl<'a> RocksView<'a> {
    pub(super) fn new(store: &'a RocksStore, gen: Arc<Generation>, version: u64) -> RocksView<'a> {
        let snapshot = GenSnapshot::new(gen, |g| g.db().snapshot());
        let mut opts = RocksStore::read_opts();
        opts.set_snapshot(snapshot.borrow_dependent());
        RocksView {
            store,
            opts,
            snapshot,
            version,
        }
    }

    fn at(&self) -> At<'_> {
        At {
            gen: self.snapshot.borrow_owner(),
            snapshot: Some(self.snapshot.borrow_dependent()),
            opts: &self.opts,
            version: self.version,
        }
    }
}

impl ReadView for RocksView<'_> {
    fn inode(&self, id: InodeId) -> Result<Option<Inode>, StoreError> {
        self.store.inode_at(self.at(), id)
    }
    fn child(&self, parent: InodeId, name: &str) -> Result<Option<InodeId>, StoreError> {
        self.store.child_at(self.at(), parent, name)
    }
    fn children(&self, parent: InodeId, start_after: &str, limit: usize) -> Result<Vec<(String, InodeId)>, StoreError> {
        self.store.children_at(self.at(), parent, start_after, limit)
    }
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.store.meta_at(self.at(), key)
    }
    fn retry(&self, key: &RetryKey) -> Result<Option<RetryRecord>, StoreError> {
        self.store.decoded_at(self.at(), CF_RETRY, &retry_key(key))
    }
    fn retry_older_than(&self, before_ms: i64, limit: usize) -> Result<Vec<(i64, RetryKey)>, StoreError> {
        self.store.retry_older_than_at(self.at(), before_ms, limit)
    }
    fn block(&self, id: BlockId) -> Result<Option<BlockRecord>, StoreError> {
        self.store.decoded_at(self.at(), CF_BLOCK, &id.to_be_bytes())
    }
    fn lease(&self, holder: &str) -> Result<Option<LeaseRecord>, StoreError> {
        self.store.decoded_at(self.at(), CF_LEASE, holder.as_bytes())
    }
    fn walk(&self, names: &[CompactString], inodes: &mut Vec<Inode>) -> Result<Walk, StoreError> {
        self.store.walk_at(self, self.at(), names, inodes)
    }
}

/// Reads that each see the latest commit (see [`Store::latest_view`]):
/// the cache serves them at its version of the moment, so it keeps serving
/// while other writes commit. Holds the generation it was made on; if a
/// restore replaced it meanwhile, the cache (now of another generation)
/// serves nothing and reads go to the generation held.
///
/// [`Store::latest_view`]: crate::store::Store::latest_view
pub struct RocksLatest<'a> {
    store: &'a RocksStore,
    gen: Arc<Generation>,
    opts: ReadOptions,
}

impl<'a> RocksLatest<'a> {
    pub(super) fn new(store: &'a RocksStore, gen: Arc<Generation>) -> RocksLatest<'a> {
        RocksLatest {
            store,
            gen,
            opts: RocksStore::read_opts(),
        }
    }

    fn at(&self) -> At<'_> {
        // The version first: one published after a restore comes with the
        // new generation's number (see `RocksStore::published_version`).
        let version = self.store.published_version.load(Ordering::Acquire);
        let version = if self.store.published_gen.load(Ordering::Acquire) == self.gen.number {
            version
        } else {
            u64::MAX // another generation: the cache is not this one's
        };
        At {
            gen: &self.gen,
            snapshot: None,
            opts: &self.opts,
            version,
        }
    }
}

impl ReadView for RocksLatest<'_> {
    fn inode(&self, id: InodeId) -> Result<Option<Inode>, StoreError> {
        self.store.inode_at(self.at(), id)
    }
    fn child(&self, parent: InodeId, name: &str) -> Result<Option<InodeId>, StoreError> {
        self.store.child_at(self.at(), parent, name)
    }
    fn children(&self, parent: InodeId, start_after: &str, limit: usize) -> Result<Vec<(String, InodeId)>, StoreError> {
        self.store.children_at(self.at(), parent, start_after, limit)
    }
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.store.meta_at(self.at(), key)
    }
    fn retry(&self, key: &RetryKey) -> Result<Option<RetryRecord>, StoreError> {
        self.store.decoded_at(self.at(), CF_RETRY, &retry_key(key))
    }
    fn retry_older_than(&self, before_ms: i64, limit: usize) -> Result<Vec<(i64, RetryKey)>, StoreError> {
        self.store.retry_older_than_at(self.at(), before_ms, limit)
    }
    fn block(&self, id: BlockId) -> Result<Option<BlockRecord>, StoreError> {
        self.store.decoded_at(self.at(), CF_BLOCK, &id.to_be_bytes())
    }
    fn lease(&self, holder: &str) -> Result<Option<LeaseRecord>, StoreError> {
        self.store.decoded_at(self.at(), CF_LEASE, holder.as_bytes())
    }
    fn walk(&self, names: &[CompactString], inodes: &mut Vec<Inode>) -> Result<Walk, StoreError> {
        self.store.walk_at(self, self.at(), names, inodes)
    }
}
