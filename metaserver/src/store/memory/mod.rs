//! `--store memory`: the namespace held in process memory, for comparison
//! with RocksDB (as HDFS holds it in the NameNode heap).
//!
//! Durability comes from the Raft log and snapshots alone: on restart the
//! state is rebuilt by installing the last snapshot and replaying the log.
//! One `RwLock` guards the maps; a commit holds it for the length of one
//! batch, and a [`Store::view`] holds it shared for a whole operation.
//! A directory's entries live in the directory's own record
//! ([`entries::Entries`]), so resolving a path component is one hash lookup
//! plus a search within one directory, and allocates nothing.

mod entries;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use compact_str::CompactString;
use rustc_hash::FxHashMap as HashMap;

use parking_lot::RwLock;

use super::{
    checkpoint, BlockId, BlockRecord, Image, LeaseRecord, ReadView, RetryKey, RetryRecord, RetryWrite, Store,
    StoreError, Walk, WriteBatch,
};
use raftfs_proto::{Block, Permission};

use crate::inode::{Inode, InodeId, InodeKind, Quota};

/// Block sizes are kept in units of this many bytes.
const BLOCK_UNIT_BYTES: u64 = raftfs_proto::limits::BYTES_PER_CHECKSUM;

/// Owner, group and lease-holder names, interned: most inodes share a handful of them.
#[derive(Default)]
struct Names {
    names: Vec<CompactString>,
    index: HashMap<CompactString, u32>,
}

impl Names {
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(i) = self.index.get(name) {
            return *i;
        }
        let i = u32::try_from(self.names.len())
            .ok()
            .filter(|i| *i != NO_LEASE_HOLDER)
            .expect("fewer than 2^32 - 1 distinct user, group and client names");
        let name = CompactString::from(name);
        self.names.push(name.clone());
        self.index.insert(name, i);
        i
    }
    fn get(&self, i: u32) -> &CompactString {
        &self.names[i as usize]
    }
}

/// An inode as the memory store keeps it: names interned, fields packed
/// into 64 bytes (see the size test below), boxed in the inode table so a
/// table slot is 16 bytes: the table doubles as it grows, and a doubled
/// table of 64-byte slots cost ~80 bytes per inode of its own.
/// `block_units` (the block size in 512-byte units; plan checks it is a
/// multiple of 512 and at most 2^40) and `replication` are 0 for directories.
struct MemInode {
    parent: InodeId,
    mtime: i64,
    atime: i64,
    kind: MemKind,
    owner: u32,
    group: u32,
    block_units: u32,
    permission: u16,
    replication: u16,
}

/// The interned lease holder of a file nobody holds open.
const NO_LEASE_HOLDER: u32 = u32::MAX;

enum MemKind {
    /// `lease_holder`: an interned client id, or [`NO_LEASE_HOLDER`].
    File {
        length: u64,
        /// Boxed so that a file without blocks costs one (thin) pointer,
        /// where a `Vec` or boxed slice would cost two or three words.
        #[allow(clippy::box_collection)]
        blocks: Option<Box<Vec<Block>>>,
        lease_holder: u32,
    },
    Directory(Box<MemDir>),
}

/// What a directory holds besides the common fields. `children` is the
/// replicated child count; `entries` the directory table's rows for it.
#[derive(Default)]
struct MemDir {
    children: u64,
    quota: Option<Box<Quota>>,
    entries: entries::Entries,
}

impl MemInode {
    fn pack(i: Inode, names: &mut Names) -> MemInode {
        let (kind, block_units, replication) = match i.kind {
            InodeKind::File {
                replication,
                block_size,
                length,
                lease_holder,
                blocks,
            } => {
                assert!(
                    block_size.is_multiple_of(BLOCK_UNIT_BYTES) && block_size / BLOCK_UNIT_BYTES <= u32::MAX as u64,
                    "block size {block_size} of inode {} cannot be packed",
                    i.id
                );
                let kind = MemKind::File {
                    length,
                    blocks: (!blocks.is_empty()).then(|| Box::new(blocks)),
                    lease_holder: lease_holder.map_or(NO_LEASE_HOLDER, |h| names.intern(&h)),
                };
                (kind, (block_size / BLOCK_UNIT_BYTES) as u32, replication)
            }
            InodeKind::Directory { children, quota } => {
                let dir = MemDir {
                    children,
                    quota,
                    entries: entries::Entries::default(),
                };
                (MemKind::Directory(Box::new(dir)), 0, 0)
            }
        };
        MemInode {
            parent: i.parent,
            mtime: i.mtime,
            atime: i.atime,
            kind,
            owner: names.intern(&i.owner),
            group: names.intern(&i.group),
            block_units,
            permission: i.permission.bits(),
            replication,
        }
    }

    fn unpack(&self, id: InodeId, names: &Names) -> Inode {
        let kind = match &self.kind {
            MemKind::File {
                length,
                blocks,
                lease_holder,
            } => InodeKind::File {
                replication: self.replication,
                block_size: self.block_units as u64 * BLOCK_UNIT_BYTES,
                length: *length,
                lease_holder: (*lease_holder != NO_LEASE_HOLDER).then(|| names.get(*lease_holder).to_string()),
                blocks: blocks.as_deref().cloned().unwrap_or_default(),
            },
            MemKind::Directory(d) => InodeKind::Directory {
                children: d.children,
                quota: d.quota.clone(),
            },
        };
        Inode {
            id,
            parent: self.parent,
            kind,
            permission: Permission::new(self.permission),
            owner: names.get(self.owner).clone(),
            group: names.get(self.group).clone(),
            mtime: self.mtime,
            atime: self.atime,
        }
    }
}

#[derive(Default)]
struct Maps {
    names: Names,
    inodes: HashMap<InodeId, Box<MemInode>>,
    meta: BTreeMap<String, Vec<u8>>,
    retry: HashMap<RetryKey, RetryRecord>,
    /// (time, key) of every retry record, for expiry.
    retry_by_time: BTreeSet<(i64, RetryKey)>,
    blocks: BTreeMap<BlockId, BlockRecord>,
    leases: BTreeMap<String, LeaseRecord>,
    lease_files: BTreeSet<(String, InodeId)>,
}

impl Maps {
    fn dir(&self, id: InodeId) -> Option<&MemDir> {
        match &self.inodes.get(&id)?.kind {
            MemKind::Directory(d) => Some(d),
            MemKind::File { .. } => None,
        }
    }

    fn dir_mut(&mut self, id: InodeId) -> Option<&mut MemDir> {
        match &mut self.inodes.get_mut(&id)?.kind {
            MemKind::Directory(d) => Some(d),
            MemKind::File { .. } => None,
        }
    }

    /// Store `inode`, keeping a directory's entries when it is rewritten.
    fn put_inode(&mut self, inode: Inode) {
        let id = inode.id;
        let mut packed = MemInode::pack(inode, &mut self.names);
        match self.inodes.get_mut(&id) {
            Some(old) => {
                match (&mut old.kind, &mut packed.kind) {
                    (MemKind::Directory(o), MemKind::Directory(n)) => n.entries = std::mem::take(&mut o.entries),
                    (MemKind::File { .. }, MemKind::File { .. }) => {}
                    _ => panic!("inode {id} changed between file and directory"),
                }
                // In place: a rewrite (a parent's mtime on every create) allocates nothing.
                **old = packed;
            }
            None => {
                self.inodes.insert(id, Box::new(packed));
            }
        }
    }

    fn delete_inode(&mut self, id: InodeId) {
        if let Some(MemKind::Directory(d)) = self.inodes.remove(&id).map(|m| m.kind) {
            assert!(
                d.entries.is_empty(),
                "directory {id} deleted with {} entries left",
                d.entries.len()
            );
        }
    }
}

impl ReadView for Maps {
    fn inode(&self, id: InodeId) -> Result<Option<Inode>, StoreError> {
        Ok(self.inodes.get(&id).map(|m| m.unpack(id, &self.names)))
    }

    fn child(&self, parent: InodeId, name: &str) -> Result<Option<InodeId>, StoreError> {
        Ok(self.dir(parent).and_then(|d| d.entries.get(name)))
    }

    fn children(&self, parent: InodeId, start_after: &str, limit: usize) -> Result<Vec<(String, InodeId)>, StoreError> {
        Ok(self
            .dir(parent)
            .map(|d| d.entries.page(start_after, limit))
            .unwrap_or_default())
    }

    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.meta.get(key).cloned())
    }

    fn retry(&self, key: &RetryKey) -> Result<Option<RetryRecord>, StoreError> {
        Ok(self.retry.get(key).cloned())
    }

    fn retry_older_than(&self, before_ms: i64, limit: usize) -> Result<Vec<(i64, RetryKey)>, StoreError> {
        Ok(self
            .retry_by_time
            .iter()
            .take_while(|(t, _)| *t < before_ms)
            .take(limit)
            .cloned()
            .collect())
    }

    fn block(&self, id: BlockId) -> Result<Option<BlockRecord>, StoreError> {
        Ok(self.blocks.get(&id).copied())
    }

    fn lease(&self, holder: &str) -> Result<Option<LeaseRecord>, StoreError> {
        Ok(self.leases.get(holder).copied())
    }

    fn walk(&self, names: &[CompactString], inodes: &mut Vec<Inode>) -> Result<Walk, StoreError> {
        // Holds the current directory's record: one table lookup per name.
        let mut parent = inodes.last().expect("a walk starts at an inode").id;
        let Some(mut cur) = self.inodes.get(&parent) else {
            return Ok(Walk::Ended);
        };
        for (i, name) in names.iter().enumerate() {
            let MemKind::Directory(d) = &cur.kind else {
                return Ok(Walk::ThroughFile);
            };
            let Some(id) = d.entries.get(name) else {
                return Ok(Walk::Ended);
            };
            let Some(next) = self.inodes.get(&id) else {
                return Ok(Walk::Dangling {
                    parent,
                    name: i,
                    child: id,
                });
            };
            inodes.push(next.unpack(id, &self.names));
            (parent, cur) = (id, next);
        }
        Ok(Walk::Ended)
    }
}

#[derive(Default)]
pub struct MemStore {
    maps: RwLock<Maps>,
}

impl MemStore {
    pub fn new() -> MemStore {
        MemStore::default()
    }
}

/// [`Store::view`] of the memory store: the maps' read lock, held for the
/// view's life, so a sequence of reads sees one committed state.
struct MemView<'a>(parking_lot::RwLockReadGuard<'a, Maps>);

impl ReadView for MemView<'_> {
    fn inode(&self, id: InodeId) -> Result<Option<Inode>, StoreError> {
        self.0.inode(id)
    }
    fn child(&self, parent: InodeId, name: &str) -> Result<Option<InodeId>, StoreError> {
        self.0.child(parent, name)
    }
    fn children(&self, parent: InodeId, start_after: &str, limit: usize) -> Result<Vec<(String, InodeId)>, StoreError> {
        self.0.children(parent, start_after, limit)
    }
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.meta(key)
    }
    fn retry(&self, key: &RetryKey) -> Result<Option<RetryRecord>, StoreError> {
        self.0.retry(key)
    }
    fn retry_older_than(&self, before_ms: i64, limit: usize) -> Result<Vec<(i64, RetryKey)>, StoreError> {
        self.0.retry_older_than(before_ms, limit)
    }
    fn block(&self, id: BlockId) -> Result<Option<BlockRecord>, StoreError> {
        self.0.block(id)
    }
    fn lease(&self, holder: &str) -> Result<Option<LeaseRecord>, StoreError> {
        self.0.lease(holder)
    }
    fn walk(&self, names: &[CompactString], inodes: &mut Vec<Inode>) -> Result<Walk, StoreError> {
        self.0.walk(names, inodes)
    }
}

impl ReadView for MemStore {
    fn inode(&self, id: InodeId) -> Result<Option<Inode>, StoreError> {
        self.maps.read().inode(id)
    }
    fn child(&self, parent: InodeId, name: &str) -> Result<Option<InodeId>, StoreError> {
        self.maps.read().child(parent, name)
    }
    fn children(&self, parent: InodeId, start_after: &str, limit: usize) -> Result<Vec<(String, InodeId)>, StoreError> {
        self.maps.read().children(parent, start_after, limit)
    }
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.maps.read().meta(key)
    }
    fn retry(&self, key: &RetryKey) -> Result<Option<RetryRecord>, StoreError> {
        self.maps.read().retry(key)
    }
    fn retry_older_than(&self, before_ms: i64, limit: usize) -> Result<Vec<(i64, RetryKey)>, StoreError> {
        self.maps.read().retry_older_than(before_ms, limit)
    }
    fn block(&self, id: BlockId) -> Result<Option<BlockRecord>, StoreError> {
        self.maps.read().block(id)
    }
    fn lease(&self, holder: &str) -> Result<Option<LeaseRecord>, StoreError> {
        self.maps.read().lease(holder)
    }
    fn walk(&self, names: &[CompactString], inodes: &mut Vec<Inode>) -> Result<Walk, StoreError> {
        self.maps.read().walk(names, inodes)
    }
}

impl Store for MemStore {
    fn view(&self) -> Box<dyn ReadView + '_> {
        Box::new(MemView(self.maps.read()))
    }

    fn latest_view(&self) -> Box<dyn ReadView + '_> {
        self.view()
    }

    fn commit(&self, batch: WriteBatch) -> Result<(), StoreError> {
        let mut maps = self.maps.write();
        // New and changed inodes first (a new directory exists before its
        // entries), then entries, then deletions (a directory is emptied of
        // entries before it goes).
        let mut deleted = Vec::new();
        for (id, v) in batch.inodes {
            match v {
                Some(inode) => {
                    assert_eq!(inode.id, id, "inode record stored under another id");
                    maps.put_inode(inode);
                }
                None => deleted.push(id),
            }
        }
        for ((p, n), v) in batch.dentries {
            let dir = maps
                .dir_mut(p)
                .unwrap_or_else(|| panic!("dentry {p}/{n} written under a missing directory"));
            match v {
                Some(c) => dir.entries.insert(&n, c),
                None => {
                    dir.entries.remove(&n);
                }
            }
        }
        for id in deleted {
            maps.delete_inode(id);
        }
        for (k, v) in batch.meta {
            match v {
                Some(v) => maps.meta.insert(k, v),
                None => maps.meta.remove(&k),
            };
        }
        for (k, v) in batch.retry {
            match v {
                RetryWrite::Put { record: r, .. } => {
                    maps.retry_by_time.insert((r.time_ms, k.clone()));
                    if let Some(old) = maps.retry.insert(k.clone(), r) {
                        maps.retry_by_time.remove(&(old.time_ms, k));
                    }
                }
                RetryWrite::Delete { time_ms } => {
                    maps.retry_by_time.remove(&(time_ms, k.clone()));
                    maps.retry.remove(&k);
                }
            }
        }
        for (id, v) in batch.blocks {
            match v {
                Some(r) => maps.blocks.insert(id, r),
                None => maps.blocks.remove(&id),
            };
        }
        for (holder, v) in batch.leases {
            match v {
                Some(t) => maps.leases.insert(holder, t),
                None => maps.leases.remove(&holder),
            };
        }
        for (key, held) in batch.lease_files {
            if held {
                maps.lease_files.insert(key);
            } else {
                maps.lease_files.remove(&key);
            }
        }
        Ok(())
    }

    fn export(&self) -> Result<Image, StoreError> {
        let maps = self.maps.read();
        let mut inodes: Vec<Inode> = maps.inodes.iter().map(|(id, m)| m.unpack(*id, &maps.names)).collect();
        inodes.sort_by_key(|i| i.id);
        let mut dirs: Vec<(InodeId, &MemDir)> = maps
            .inodes
            .iter()
            .filter_map(|(id, m)| match &m.kind {
                MemKind::Directory(d) => Some((*id, &**d)),
                MemKind::File { .. } => None,
            })
            .collect();
        dirs.sort_by_key(|(id, _)| *id);
        let dentries = dirs
            .into_iter()
            .flat_map(|(p, d)| d.entries.iter().map(move |(n, c)| (p, n.to_string(), c)))
            .collect();
        let mut retry: Vec<(RetryKey, RetryRecord)> = maps.retry.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        retry.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Image {
            inodes,
            dentries,
            meta: maps.meta.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            retry,
            blocks: maps.blocks.iter().map(|(k, v)| (*k, *v)).collect(),
            leases: maps.leases.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            lease_files: maps.lease_files.iter().cloned().collect(),
        })
    }

    fn import(&self, image: Image) -> Result<(), StoreError> {
        let mut maps = Maps::default();
        for inode in image.inodes {
            maps.put_inode(inode);
        }
        for (p, n, c) in image.dentries {
            let dir = maps.dir_mut(p).ok_or_else(|| StoreError::Corrupt {
                table: "dentry",
                detail: format!("entry {p}/{n} of a missing directory"),
            })?;
            dir.entries.insert(&n, c);
        }
        maps.meta.extend(image.meta);
        for (k, r) in image.retry {
            maps.retry_by_time.insert((r.time_ms, k.clone()));
            maps.retry.insert(k, r);
        }
        maps.blocks.extend(image.blocks);
        maps.leases.extend(image.leases);
        maps.lease_files.extend(image.lease_files);
        *self.maps.write() = maps;
        Ok(())
    }

    fn checkpoint(&self, dst: &Path, meta_keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let image = self.export()?;
        let values = meta_keys
            .iter()
            .map(|k| image.meta.iter().find(|(m, _)| m == k).map(|(_, v)| v.clone()))
            .collect();
        checkpoint::write_image(dst, &image)?;
        Ok(values)
    }

    fn restore(&self, src: &Path) -> Result<(), StoreError> {
        let image = match checkpoint::format_of(src)? {
            checkpoint::CheckpointFormat::Image => checkpoint::read_image(src)?,
            checkpoint::CheckpointFormat::Rocksdb => super::RocksStore::export_checkpoint(src)?,
        };
        self.import(image)
    }

    fn kind(&self) -> &'static str {
        "memory"
    }

    fn blocks_page(&self, after: Option<BlockId>, limit: usize) -> Result<Vec<(BlockId, BlockRecord)>, StoreError> {
        use std::ops::Bound;
        let lower = after.map_or(Bound::Unbounded, Bound::Excluded);
        let maps = self.maps.read();
        Ok(maps
            .blocks
            .range((lower, Bound::Unbounded))
            .take(limit)
            .map(|(k, v)| (*k, *v))
            .collect())
    }

    fn leases_page(&self, after: &str, limit: usize) -> Result<Vec<(String, LeaseRecord)>, StoreError> {
        use std::ops::Bound;
        let maps = self.maps.read();
        Ok(maps
            .leases
            .range::<str, _>((Bound::Excluded(after), Bound::Unbounded))
            .take(limit)
            .map(|(k, v)| (k.clone(), *v))
            .collect())
    }

    fn meta_page(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        use std::ops::Bound;
        let start = if after < prefix { prefix } else { after };
        let lower = if after < prefix {
            Bound::Included(start)
        } else {
            Bound::Excluded(start)
        };
        let maps = self.maps.read();
        Ok(maps
            .meta
            .range::<str, _>((lower, Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }

    fn lease_files(&self, holder: &str, limit: usize) -> Result<Vec<InodeId>, StoreError> {
        let maps = self.maps.read();
        Ok(maps
            .lease_files
            .range((holder.to_string(), 0)..)
            .take_while(|(h, _)| h == holder)
            .take(limit)
            .map(|(_, id)| *id)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_inode_is_small() {
        assert!(
            std::mem::size_of::<MemInode>() <= 64,
            "MemInode is {} bytes",
            std::mem::size_of::<MemInode>()
        );
    }
}
