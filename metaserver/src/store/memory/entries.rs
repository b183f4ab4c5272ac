//! The entries of one directory in the memory store, as HDFS keeps a
//! directory's children in the directory itself.
//!
//! Small directories (most of them) hold a sorted `Vec`: one allocation, a
//! binary search per lookup, 24 bytes per entry plus the name. A directory
//! that grows past [`SMALL_DIRECTORY_MAX_ENTRIES`] becomes a `BTreeMap`, so
//! inserting into a directory of a million entries stays logarithmic. Names
//! are ordered by their bytes, as RocksDB orders the dentry table.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::inode::InodeId;

/// Largest directory kept as a sorted vector.
pub const SMALL_DIRECTORY_MAX_ENTRIES: usize = 128;

#[derive(Debug)]
pub enum Entries {
    Small(Vec<(Box<str>, InodeId)>),
    Large(BTreeMap<Box<str>, InodeId>),
}

impl Default for Entries {
    fn default() -> Self {
        Entries::Small(Vec::new())
    }
}

impl Entries {
    pub fn len(&self) -> usize {
        match self {
            Entries::Small(v) => v.len(),
            Entries::Large(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, name: &str) -> Option<InodeId> {
        match self {
            Entries::Small(v) => v.binary_search_by(|(n, _)| (**n).cmp(name)).ok().map(|i| v[i].1),
            Entries::Large(m) => m.get(name).copied(),
        }
    }

    /// Set `name` to `child`, replacing any entry of that name.
    pub fn insert(&mut self, name: &str, child: InodeId) {
        match self {
            Entries::Small(v) => match v.binary_search_by(|(n, _)| (**n).cmp(name)) {
                Ok(i) => v[i].1 = child,
                Err(i) => {
                    if v.len() < SMALL_DIRECTORY_MAX_ENTRIES {
                        v.insert(i, (name.into(), child));
                    } else {
                        let mut m: BTreeMap<Box<str>, InodeId> = std::mem::take(v).into_iter().collect();
                        m.insert(name.into(), child);
                        *self = Entries::Large(m);
                    }
                }
            },
            Entries::Large(m) => {
                m.insert(name.into(), child);
            }
        }
    }

    /// Remove `name`; the entry it held, if any.
    pub fn remove(&mut self, name: &str) -> Option<InodeId> {
        match self {
            Entries::Small(v) => {
                let i = v.binary_search_by(|(n, _)| (**n).cmp(name)).ok()?;
                let (_, child) = v.remove(i);
                if v.capacity() > 2 * v.len() + 4 {
                    v.shrink_to(v.len() + v.len() / 4);
                }
                Some(child)
            }
            Entries::Large(m) => {
                let child = m.remove(name);
                if m.len() <= SMALL_DIRECTORY_MAX_ENTRIES / 2 {
                    *self = Entries::Small(std::mem::take(m).into_iter().collect());
                }
                child
            }
        }
    }

    /// Entries named strictly after `start_after` (from the first if it is
    /// empty), in name order, at most `limit`.
    pub fn page(&self, start_after: &str, limit: usize) -> Vec<(String, InodeId)> {
        match self {
            Entries::Small(v) => {
                let from = if start_after.is_empty() {
                    0
                } else {
                    v.partition_point(|(n, _)| **n <= *start_after)
                };
                v[from..].iter().take(limit).map(|(n, c)| (n.to_string(), *c)).collect()
            }
            Entries::Large(m) => {
                let lower = if start_after.is_empty() {
                    Bound::Unbounded
                } else {
                    Bound::Excluded(start_after)
                };
                m.range::<str, _>((lower, Bound::Unbounded))
                    .take(limit)
                    .map(|(n, c)| (n.to_string(), *c))
                    .collect()
            }
        }
    }

    /// Every entry in name order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&str, InodeId)> + '_> {
        match self {
            Entries::Small(v) => Box::new(v.iter().map(|(n, c)| (&**n, *c))),
            Entries::Large(m) => Box::new(m.iter().map(|(n, c)| (&**n, *c))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_agree_in_order_and_content() {
        let mut e = Entries::default();
        let n = SMALL_DIRECTORY_MAX_ENTRIES * 3;
        for i in (0..n).rev() {
            e.insert(&format!("f{i:05}"), i as u64);
        }
        assert!(matches!(e, Entries::Large(_)), "grew into a map");
        assert_eq!(e.len(), n);
        assert_eq!(e.get("f00007"), Some(7));
        let page = e.page("f00009", 3);
        assert_eq!(page.iter().map(|(_, c)| *c).collect::<Vec<_>>(), vec![10, 11, 12]);
        for i in 0..n - 10 {
            assert_eq!(e.remove(&format!("f{i:05}")), Some(i as u64));
        }
        assert!(matches!(e, Entries::Small(_)), "shrank back into a vector");
        assert_eq!(e.len(), 10);
        assert_eq!(e.page("", 100).len(), 10);
        assert_eq!(e.page("f99999", 100).len(), 0);
        assert_eq!(e.remove("nope"), None);
        let names: Vec<&str> = e.iter().map(|(n, _)| n).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
    }

    #[test]
    fn byte_order_like_rocksdb() {
        let mut e = Entries::default();
        for n in ["b", "a", "B", "é", "a0", "_"] {
            e.insert(n, 1);
        }
        let names: Vec<String> = e.page("", 10).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, vec!["B", "_", "a", "a0", "b", "é"]);
        e.insert("a", 9);
        assert_eq!(e.get("a"), Some(9));
        assert_eq!(e.len(), 6);
    }
}
