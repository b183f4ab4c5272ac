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
use crate::inode::{Inode, InodeId};

#[derive(Default)]
struct Maps {
    inodes: HashMap<InodeId, Inode>,
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
        Ok(self.maps.read().inodes.get(&id).cloned())
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
                    maps.inodes.insert(id, inode);
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
        let mut inodes: Vec<Inode> = maps.inodes.values().cloned().collect();
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
            maps.inodes.insert(inode.id, inode);
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
