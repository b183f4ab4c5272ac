//! The entries of one directory in the memory store, as HDFS keeps a
//! directory's children in the directory itself.
//!
//! Directories of up to [`PACKED_DIRECTORY_MAX_ENTRIES`] entries (nearly
//! all of them) are [`Packed`]: the names and child ids in one byte arena,
//! plus a sorted list of 4-byte offsets into it. A lookup is a binary search
//! that stays within two allocations of the directory, and an entry costs
//! its name, 9 bytes and an offset. Before, each entry was a boxed name in
//! a sorted vector (or a map): a lookup chased one pointer per name it
//! compared, and an entry cost ~40 bytes more. A directory that grows past
//! the bound becomes a `BTreeMap`, so inserting into a directory of a
//! million entries stays logarithmic. Names are ordered by their bytes, as
//! RocksDB orders the dentry table.

use std::collections::BTreeMap;
use std::ops::Bound;

use raftfs_proto::limits::MAX_NAME_LEN_BYTES;

use crate::inode::InodeId;

/// Largest directory kept [`Packed`]; past it, a `BTreeMap`.
pub const PACKED_DIRECTORY_MAX_ENTRIES: usize = 4096;
/// A map that shrinks to this many entries becomes [`Packed`] again.
const PACKED_DIRECTORY_REPACK_ENTRIES: usize = PACKED_DIRECTORY_MAX_ENTRIES / 2;
/// Bytes of a packed record besides its name: the name's length and the child id.
const RECORD_OVERHEAD_BYTES: usize = 1 + 8;

const _: () = assert!(
    MAX_NAME_LEN_BYTES <= u8::MAX as usize,
    "a name's length fits the record's length byte"
);

#[derive(Debug)]
pub enum Entries {
    Packed(Packed),
    Large(BTreeMap<Box<str>, InodeId>),
}

impl Default for Entries {
    fn default() -> Self {
        Entries::Packed(Packed::default())
    }
}

/// Entries as records `[name length: u8][name][child id: u64 LE]` in an
/// arena, in the order they were inserted, and the records' offsets sorted
/// by name. A removed record stays in the arena until the removed bytes are
/// half of it; then the arena is rewritten.
#[derive(Debug, Default)]
pub struct Packed {
    arena: Vec<u8>,
    sorted: Vec<u32>,
    removed_bytes: usize,
}

impl Packed {
    fn name_at(&self, offset: u32) -> &[u8] {
        let o = offset as usize;
        let len = self.arena[o] as usize;
        &self.arena[o + 1..o + 1 + len]
    }

    fn child_at(&self, offset: u32) -> InodeId {
        let o = offset as usize;
        let at = o + 1 + self.arena[o] as usize;
        let bytes: [u8; 8] = self.arena[at..at + 8].try_into().expect("8 bytes of child id");
        InodeId::from_le_bytes(bytes)
    }

    fn set_child_at(&mut self, offset: u32, child: InodeId) {
        let o = offset as usize;
        let at = o + 1 + self.arena[o] as usize;
        self.arena[at..at + 8].copy_from_slice(&child.to_le_bytes());
    }

    /// Where `name` is in `sorted`, or where it would go.
    fn search(&self, name: &str) -> Result<usize, usize> {
        self.sorted.binary_search_by(|o| self.name_at(*o).cmp(name.as_bytes()))
    }

    fn push_record(&mut self, name: &str, child: InodeId) -> u32 {
        assert!(
            !name.is_empty() && name.len() <= MAX_NAME_LEN_BYTES,
            "directory entry name of {} bytes",
            name.len()
        );
        let offset = u32::try_from(self.arena.len()).expect("a packed directory's arena stays below 4 GiB");
        self.arena.push(name.len() as u8);
        self.arena.extend_from_slice(name.as_bytes());
        self.arena.extend_from_slice(&child.to_le_bytes());
        offset
    }

    fn insert(&mut self, name: &str, child: InodeId) {
        match self.search(name) {
            Ok(i) => self.set_child_at(self.sorted[i], child),
            Err(i) => {
                let offset = self.push_record(name, child);
                self.sorted.insert(i, offset);
            }
        }
    }

    fn remove(&mut self, name: &str) -> Option<InodeId> {
        let i = self.search(name).ok()?;
        let offset = self.sorted.remove(i);
        let child = self.child_at(offset);
        self.removed_bytes += RECORD_OVERHEAD_BYTES + name.len();
        if self.removed_bytes * 2 > self.arena.len() {
            self.rewrite();
        }
        Some(child)
    }

    /// Entries given in name order, packed without spare capacity.
    fn from_sorted<'n>(entries: impl Iterator<Item = (&'n str, InodeId)>) -> Packed {
        let mut p = Packed::default();
        for (name, child) in entries {
            let offset = p.push_record(name, child);
            p.sorted.push(offset);
        }
        p.arena.shrink_to_fit();
        p.sorted.shrink_to_fit();
        p
    }

    /// Rewrite the arena without removed records, in name order.
    fn rewrite(&mut self) {
        *self = Packed::from_sorted(self.sorted.iter().map(|o| self.entry(*o)));
    }

    fn entry(&self, offset: u32) -> (&str, InodeId) {
        let name = std::str::from_utf8(self.name_at(offset)).expect("entry names are UTF-8");
        (name, self.child_at(offset))
    }
}

impl Entries {
    pub fn len(&self) -> usize {
        match self {
            Entries::Packed(p) => p.sorted.len(),
            Entries::Large(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, name: &str) -> Option<InodeId> {
        match self {
            Entries::Packed(p) => p.search(name).ok().map(|i| p.child_at(p.sorted[i])),
            Entries::Large(m) => m.get(name).copied(),
        }
    }

    /// Set `name` to `child`, replacing any entry of that name.
    pub fn insert(&mut self, name: &str, child: InodeId) {
        match self {
            Entries::Packed(p) => {
                if p.sorted.len() < PACKED_DIRECTORY_MAX_ENTRIES || p.search(name).is_ok() {
                    p.insert(name, child);
                } else {
                    let mut m: BTreeMap<Box<str>, InodeId> = p
                        .sorted
                        .iter()
                        .map(|o| p.entry(*o))
                        .map(|(n, c)| (n.into(), c))
                        .collect();
                    m.insert(name.into(), child);
                    *self = Entries::Large(m);
                }
            }
            Entries::Large(m) => {
                m.insert(name.into(), child);
            }
        }
    }

    /// Remove `name`; the entry it held, if any.
    pub fn remove(&mut self, name: &str) -> Option<InodeId> {
        match self {
            Entries::Packed(p) => p.remove(name),
            Entries::Large(m) => {
                let child = m.remove(name);
                if m.len() <= PACKED_DIRECTORY_REPACK_ENTRIES {
                    *self = Entries::Packed(Packed::from_sorted(m.iter().map(|(n, c)| (&**n, *c))));
                }
                child
            }
        }
    }

    /// Entries named strictly after `start_after` (from the first if it is
    /// empty), in name order, at most `limit`.
    pub fn page(&self, start_after: &str, limit: usize) -> Vec<(String, InodeId)> {
        match self {
            Entries::Packed(p) => {
                let from = if start_after.is_empty() {
                    0
                } else {
                    p.sorted.partition_point(|o| p.name_at(*o) <= start_after.as_bytes())
                };
                p.sorted[from..]
                    .iter()
                    .take(limit)
                    .map(|o| {
                        let (n, c) = p.entry(*o);
                        (n.to_string(), c)
                    })
                    .collect()
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
            Entries::Packed(p) => Box::new(p.sorted.iter().map(|o| p.entry(*o))),
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
        let n = PACKED_DIRECTORY_MAX_ENTRIES * 3;
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
        assert!(matches!(e, Entries::Packed(_)), "shrank back into a packed arena");
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

    /// Random inserts, replacements and removals (fixed seed, printed so a
    /// failure can be replayed) against a `BTreeMap` of the same entries,
    /// across the packed/map boundary both ways and through arena rewrites.
    #[test]
    fn packed_and_map_agree_with_a_model_under_random_changes() {
        let seed: u64 = 0x5eed_2026_1203;
        println!("seed {seed:#x}");
        let mut x = seed;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut e = Entries::default();
        let mut model: BTreeMap<String, InodeId> = BTreeMap::new();
        let names = PACKED_DIRECTORY_MAX_ENTRIES as u64 * 2;
        for step in 0..60_000u64 {
            // Grow for a while, then shrink, then grow again.
            let grow = (step / 20_000) % 2 == 0;
            let r = next();
            let name = format!("n{}", r % names);
            if (r >> 32) % 10 < if grow { 7 } else { 2 } {
                e.insert(&name, step);
                model.insert(name, step);
            } else {
                assert_eq!(e.remove(&name), model.remove(&name), "remove {name} at step {step}");
            }
            assert_eq!(e.len(), model.len(), "length at step {step}");
            if step % 997 == 0 {
                let all: Vec<(String, InodeId)> = e.iter().map(|(n, c)| (n.to_string(), c)).collect();
                let want: Vec<(String, InodeId)> = model.iter().map(|(n, c)| (n.clone(), *c)).collect();
                assert_eq!(all, want, "contents at step {step}");
                let probe = format!("n{}", next() % names);
                assert_eq!(e.get(&probe), model.get(&probe).copied(), "get {probe} at step {step}");
                let page: Vec<String> = e.page(&probe, 5).into_iter().map(|(n, _)| n).collect();
                let want: Vec<String> = model
                    .range::<str, _>((Bound::Excluded(probe.as_str()), Bound::Unbounded))
                    .take(5)
                    .map(|(n, _)| n.clone())
                    .collect();
                assert_eq!(page, want, "page after {probe} at step {step}");
            }
        }
        assert!(!model.is_empty());
    }

    #[test]
    fn a_packed_entry_costs_its_name_and_13_bytes() {
        let mut e = Entries::default();
        for i in 0..1000u64 {
            e.insert(&format!("ThroughputBench{i:03}"), i);
        }
        let Entries::Packed(p) = &e else {
            panic!("1000 entries stay packed")
        };
        assert_eq!(p.arena.len(), 1000 * (RECORD_OVERHEAD_BYTES + 18));
        assert_eq!(p.sorted.len(), 1000);
        // The 501st removal makes removed bytes more than half the arena:
        // it is rewritten with the 499 left; 99 more removals stay garbage.
        for i in 0..600u64 {
            assert_eq!(e.remove(&format!("ThroughputBench{i:03}")), Some(i));
        }
        let Entries::Packed(p) = &e else {
            panic!("400 entries stay packed")
        };
        assert_eq!(
            p.arena.len(),
            499 * (RECORD_OVERHEAD_BYTES + 18),
            "the arena was rewritten once"
        );
        assert_eq!(p.removed_bytes, 99 * (RECORD_OVERHEAD_BYTES + 18));
        assert_eq!(e.len(), 400);
        assert_eq!(e.get("ThroughputBench600"), Some(600));
        assert_eq!(e.get("ThroughputBench000"), None);
        assert_eq!(
            e.page("", 2).into_iter().map(|(_, c)| c).collect::<Vec<_>>(),
            vec![600, 601]
        );
    }
}
