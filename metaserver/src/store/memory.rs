//! `--store memory`: the namespace held in process memory, for comparison
//! with RocksDB (as HDFS holds it in the NameNode heap).
//!
//! Durability comes from the Raft log and snapshots alone: on restart the
//! state is rebuilt by installing the last snapshot and replaying the log.
//! One `RwLock` guards the maps; a commit holds it for the length of one
//! batch.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap as HashMap;
use std::ops::Bound;

use parking_lot::RwLock;

use super::{Image, ReadView, RetryKey, RetryRecord, RetryWrite, Store, StoreError, WriteBatch};
use raftfs_proto::Permission;

use crate::inode::{Inode, InodeId, InodeKind, Quota};

/// Block sizes are kept in units of this many bytes.
const BLOCK_UNIT_BYTES: u64 = raftfs_proto::limits::BYTES_PER_CHECKSUM;

/// Owner, group and lease-holder names, interned: most inodes share a handful of them.
#[derive(Default)]
struct Names {
    names: Vec<Box<str>>,
    index: HashMap<Box<str>, u32>,
}

impl Names {
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(i) = self.index.get(name) {
            return *i;
        }
        let i = u32::try_from(self.names.len()).expect("fewer than 2^32 distinct user and group names");
        self.names.push(name.into());
        self.index.insert(name.into(), i);
        i
    }
    fn get(&self, i: u32) -> &str {
        &self.names[i as usize]
    }
}

/// An inode as the memory store keeps it: names interned, fields packed
/// (64 bytes; see the size test below).
struct MemInode {
    mtime: i64,
    atime: i64,
    kind: MemKind,
    owner: u32,
    group: u32,
    permission: u16,
}

enum MemKind {
    /// `block_units`: the block size in 512-byte units (plan checks it is a
    /// multiple of 512 and at most 2^40); `lease_holder`: an interned client id.
    File {
        length: u64,
        block_units: u32,
        replication: u16,
        lease_holder: Option<u32>,
    },
    Directory {
        children: u64,
        quota: Option<Box<Quota>>,
    },
}

impl MemInode {
    fn pack(i: Inode, names: &mut Names) -> MemInode {
        let kind = match i.kind {
            InodeKind::File {
                replication,
                block_size,
                length,
                lease_holder,
            } => {
                assert!(
                    block_size.is_multiple_of(BLOCK_UNIT_BYTES) && block_size / BLOCK_UNIT_BYTES <= u32::MAX as u64,
                    "block size {block_size} of inode {} cannot be packed",
                    i.id
                );
                MemKind::File {
                    length,
                    block_units: (block_size / BLOCK_UNIT_BYTES) as u32,
                    replication,
                    lease_holder: lease_holder.map(|h| names.intern(&h)),
                }
            }
            InodeKind::Directory { children, quota } => MemKind::Directory { children, quota },
        };
        MemInode {
            mtime: i.mtime,
            atime: i.atime,
            kind,
            owner: names.intern(&i.owner),
            group: names.intern(&i.group),
            permission: i.permission.bits(),
        }
    }

    fn unpack(&self, id: InodeId, names: &Names) -> Inode {
        let kind = match &self.kind {
            MemKind::File {
                length,
                block_units,
                replication,
                lease_holder,
            } => InodeKind::File {
                replication: *replication,
                block_size: *block_units as u64 * BLOCK_UNIT_BYTES,
                length: *length,
                lease_holder: lease_holder.map(|h| names.get(h).to_string()),
            },
            MemKind::Directory { children, quota } => InodeKind::Directory {
                children: *children,
                quota: quota.clone(),
            },
        };
        Inode {
            id,
            kind,
            permission: Permission::new(self.permission),
            owner: names.get(self.owner).to_string(),
            group: names.get(self.group).to_string(),
            mtime: self.mtime,
            atime: self.atime,
        }
    }
}

#[derive(Default)]
struct Maps {
    names: Names,
    inodes: HashMap<InodeId, MemInode>,
    dentries: BTreeMap<(InodeId, Box<str>), InodeId>,
    meta: BTreeMap<String, Vec<u8>>,
    retry: HashMap<RetryKey, RetryRecord>,
    /// (time, key) of every retry record, for expiry.
    retry_by_time: BTreeSet<(i64, RetryKey)>,
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

impl ReadView for MemStore {
    fn inode(&self, id: InodeId) -> Result<Option<Inode>, StoreError> {
        let maps = self.maps.read();
        Ok(maps.inodes.get(&id).map(|m| m.unpack(id, &maps.names)))
    }

    fn child(&self, parent: InodeId, name: &str) -> Result<Option<InodeId>, StoreError> {
        let maps = self.maps.read();
        let key = (parent, Box::<str>::from(name));
        Ok(maps.dentries.get(&key).copied())
    }

    fn children(&self, parent: InodeId, start_after: &str, limit: usize) -> Result<Vec<(String, InodeId)>, StoreError> {
        let maps = self.maps.read();
        let from = (parent, Box::<str>::from(start_after));
        let lower = if start_after.is_empty() {
            Bound::Included(from)
        } else {
            Bound::Excluded(from)
        };
        Ok(maps
            .dentries
            .range((lower, Bound::Unbounded))
            .take_while(|((p, _), _)| *p == parent)
            .take(limit)
            .map(|((_, n), c)| (n.to_string(), *c))
            .collect())
    }

    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.maps.read().meta.get(key).cloned())
    }

    fn retry(&self, key: &RetryKey) -> Result<Option<RetryRecord>, StoreError> {
        Ok(self.maps.read().retry.get(key).cloned())
    }

    fn retry_older_than(&self, before_ms: i64, limit: usize) -> Result<Vec<(i64, RetryKey)>, StoreError> {
        let maps = self.maps.read();
        Ok(maps
            .retry_by_time
            .iter()
            .take_while(|(t, _)| *t < before_ms)
            .take(limit)
            .cloned()
            .collect())
    }
}

impl Store for MemStore {
    fn commit(&self, batch: WriteBatch) -> Result<(), StoreError> {
        let mut maps = self.maps.write();
        for (id, v) in batch.inodes {
            match v {
                Some(inode) => {
                    assert_eq!(inode.id, id, "inode record stored under another id");
                    let packed = MemInode::pack(inode, &mut maps.names);
                    maps.inodes.insert(id, packed);
                }
                None => {
                    maps.inodes.remove(&id);
                }
            }
        }
        for ((p, n), v) in batch.dentries {
            let key = (p, n.into_boxed_str());
            match v {
                Some(c) => {
                    maps.dentries.insert(key, c);
                }
                None => {
                    maps.dentries.remove(&key);
                }
            }
        }
        for (k, v) in batch.meta {
            match v {
                Some(v) => maps.meta.insert(k, v),
                None => maps.meta.remove(&k),
            };
        }
        for (k, v) in batch.retry {
            match v {
                RetryWrite::Put(r) => {
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
        Ok(())
    }

    fn export(&self) -> Result<Image, StoreError> {
        let maps = self.maps.read();
        let mut inodes: Vec<Inode> = maps.inodes.iter().map(|(id, m)| m.unpack(*id, &maps.names)).collect();
        inodes.sort_by_key(|i| i.id);
        let mut retry: Vec<(RetryKey, RetryRecord)> = maps.retry.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        retry.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Image {
            inodes,
            dentries: maps
                .dentries
                .iter()
                .map(|((p, n), c)| (*p, n.to_string(), *c))
                .collect(),
            meta: maps.meta.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            retry,
        })
    }

    fn import(&self, image: Image) -> Result<(), StoreError> {
        let mut maps = Maps::default();
        for inode in image.inodes {
            let id = inode.id;
            let packed = MemInode::pack(inode, &mut maps.names);
            maps.inodes.insert(id, packed);
        }
        for (p, n, c) in image.dentries {
            maps.dentries.insert((p, n.into_boxed_str()), c);
        }
        maps.meta.extend(image.meta);
        for (k, r) in image.retry {
            maps.retry_by_time.insert((r.time_ms, k.clone()));
            maps.retry.insert(k, r);
        }
        *self.maps.write() = maps;
        Ok(())
    }

    fn kind(&self) -> &'static str {
        "memory"
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
