//! The mount table: path prefixes of the federated namespace mapped onto
//! (nameservice, path) destinations, as HDFS Router-Based Federation's
//! (DESIGN.md §7). Pure data and rules: the routers' Raft group replicates
//! it by applying [`MountTableChange`]s in log order, so every router and
//! every SDK client that holds the same [`MountTable::version`] resolves
//! every path the same way.
//!
//! Guarantees:
//! * A change is checked whole before anything moves: a malformed source
//!   or destination path, an unknown nameservice, a duplicate, a missing
//!   entry or a destination that overlaps another entry's in the same
//!   nameservice is a [`MountTableError`] and the table is unchanged.
//! * Destinations never overlap within a nameservice (no destination lies
//!   inside or above another's), so each nameservice path belongs to at
//!   most one mount point, which is what lets a nameservice refuse calls for
//!   paths it does not own. Destinations name a nameservice path, never the
//!   federated namespace, so a table cannot have a cycle.
//! * The longest prefix wins, component by component (`/data` does not own
//!   `/database`). Resolution is one ordered-map lookup per path component.
//! * Every applied change bumps the version by one.
//!
//! Caveat: the order of a multi-destination entry picks where a new file
//! goes ([`MountTable::resolve`] lists destinations in that order); RANDOM
//! and SPACE need facts of the moment (a random draw, free space) and are
//! decided by the caller from the candidates this module returns.

use std::collections::{BTreeMap, BTreeSet};

use raftfs_proto::path_rules;
use serde::{Deserialize, Serialize};

use crate::error::MountTableError;

/// Most entries one table holds (RBF serves tens of thousands).
pub const MAX_MOUNT_ENTRIES: usize = 100_000;
/// Most destinations one entry spreads over.
pub const MAX_DESTINATIONS_PER_ENTRY: usize = 64;

/// How a multi-destination entry picks the destination of a path (RBF's
/// `DestinationOrder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Order {
    /// By a hash of the first component below the mount point: a
    /// top-level directory and all it holds live in one nameservice.
    Hash,
    /// By a hash of the path's last component at every level: the files
    /// of one directory spread over every destination.
    HashAll,
    /// A random destination for each new file.
    Random,
    /// The destination with the most free space for each new file.
    Space,
}

impl Order {
    pub fn parse(s: &str) -> Result<Order, MountTableError> {
        match s.to_ascii_uppercase().as_str() {
            "HASH" => Ok(Order::Hash),
            "HASH_ALL" => Ok(Order::HashAll),
            "RANDOM" => Ok(Order::Random),
            "SPACE" => Ok(Order::Space),
            _ => Err(MountTableError::Invalid(format!(
                "unknown order {s}: expected HASH, HASH_ALL, RANDOM or SPACE"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Order::Hash => "HASH",
            Order::HashAll => "HASH_ALL",
            Order::Random => "RANDOM",
            Order::Space => "SPACE",
        }
    }
}

/// Where a mount point leads: a path in one nameservice.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Destination {
    pub nameservice: String,
    pub path: String,
}

/// Namespace (names) and space (bytes) quotas of a mount point; `None` is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountQuota {
    pub ns_quota: Option<u64>,
    pub ss_quota: Option<u64>,
}

/// One mount point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountEntry {
    /// The prefix in the federated namespace, normalized (`/data`).
    pub source: String,
    pub destinations: Vec<Destination>,
    pub order: Order,
    pub read_only: bool,
    pub owner: String,
    pub group: String,
    /// Permission bits of the mount point as a directory (0o755 by default).
    pub mode: u16,
    pub quota: MountQuota,
}

/// A change to the table, as the routers' Raft log carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MountTableChange {
    Add(MountEntry),
    /// Replace the entry of the same source.
    Update(MountEntry),
    Remove {
        source: String,
    },
    SetQuota {
        source: String,
        quota: MountQuota,
    },
    /// Enable (`false`) or disable (`true`) calls to a nameservice.
    DisableNameservice {
        nameservice: String,
        disabled: bool,
    },
}

/// What a path resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved<'a, 'p> {
    pub entry: &'a MountEntry,
    /// The components below the mount point, joined (`a/b`, or empty at the mount point).
    pub rest: &'p str,
    /// Every destination path of the entry with `rest` appended, the one
    /// the entry's order picks for `rest` first.
    pub candidates: Vec<Destination>,
}

/// The table: entries by source, and the version of the last change applied.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountTable {
    entries: BTreeMap<String, MountEntry>,
    disabled: BTreeSet<String>,
    version: u64,
}

/// A normalized absolute path: `/`-separated, no empty, `.` or `..`
/// components, no trailing slash (the root is `/`), within the namespace's
/// own path limits: the rules a namespace checks its paths by
/// ([`raftfs_proto::path_rules`]), so every mount path is a valid path.
pub fn normalize(path: &str) -> Result<String, MountTableError> {
    path_rules::normalize(path).map_err(|e| MountTableError::Invalid(e.to_string()))
}

/// Whether `inner` is `outer` or lies below it (both normalized).
pub fn within(inner: &str, outer: &str) -> bool {
    outer == "/" || inner == outer || (inner.starts_with(outer) && inner.as_bytes()[outer.len()] == b'/')
}

/// `base` with the relative `rest` appended: a destination's path of a
/// path `rest` below its mount point.
pub fn join(base: &str, rest: &str) -> String {
    if rest.is_empty() {
        return base.to_string();
    }
    // Not format!: this runs on every routed call.
    let mut joined = String::with_capacity(base.len() + 1 + rest.len());
    joined.push_str(base);
    if base != "/" {
        joined.push('/');
    }
    joined.push_str(rest);
    joined
}

/// A stable 64-bit hash (FNV-1a, then mixed): the same on every router, SDK and release,
/// unlike std's randomly keyed hasher.
fn stable_hash(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0u8)) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    // FNV's last bytes reach only the low bits: mix (murmur3's fmix64) so
    // that a rendezvous score's order depends on the whole key.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl MountTable {
    pub fn new() -> MountTable {
        MountTable::default()
    }

    /// The number of changes applied.
    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, source: &str) -> Option<&MountEntry> {
        self.entries.get(source)
    }

    /// Entries in source order.
    pub fn entries(&self) -> impl Iterator<Item = &MountEntry> {
        self.entries.values()
    }

    /// Disabled nameservices, sorted.
    pub fn disabled_nameservices(&self) -> impl Iterator<Item = &String> {
        self.disabled.iter()
    }

    pub fn is_disabled(&self, nameservice: &str) -> bool {
        self.disabled.contains(nameservice)
    }

    /// Check `change` against the table and the nameservices that exist;
    /// apply it and bump the version, or change nothing and say why.
    pub fn apply(&mut self, change: MountTableChange, nameservices: &BTreeSet<String>) -> Result<(), MountTableError> {
        match change {
            MountTableChange::Add(e) => {
                let e = self.checked(e, nameservices)?;
                if self.entries.contains_key(&e.source) {
                    return Err(MountTableError::AlreadyExists(e.source));
                }
                if self.entries.len() >= MAX_MOUNT_ENTRIES {
                    return Err(MountTableError::Invalid(format!(
                        "the mount table holds {MAX_MOUNT_ENTRIES} entries, its limit"
                    )));
                }
                self.entries.insert(e.source.clone(), e);
            }
            MountTableChange::Update(e) => {
                let e = self.checked(e, nameservices)?;
                if !self.entries.contains_key(&e.source) {
                    return Err(MountTableError::NotFound(e.source));
                }
                self.entries.insert(e.source.clone(), e);
            }
            MountTableChange::Remove { source } => {
                let source = normalize(&source)?;
                if self.entries.remove(&source).is_none() {
                    return Err(MountTableError::NotFound(source));
                }
            }
            MountTableChange::SetQuota { source, quota } => {
                let source = normalize(&source)?;
                match self.entries.get_mut(&source) {
                    Some(e) => e.quota = quota,
                    None => return Err(MountTableError::NotFound(source)),
                }
            }
            MountTableChange::DisableNameservice { nameservice, disabled } => {
                if !nameservices.contains(&nameservice) {
                    return Err(MountTableError::UnknownNameservice(nameservice));
                }
                if disabled {
                    self.disabled.insert(nameservice);
                } else {
                    self.disabled.remove(&nameservice);
                }
            }
        }
        self.version += 1;
        Ok(())
    }

    /// `e` normalized and checked against the other entries (the one of the
    /// same source, which an update replaces, aside).
    fn checked(&self, mut e: MountEntry, nameservices: &BTreeSet<String>) -> Result<MountEntry, MountTableError> {
        e.source = normalize(&e.source)?;
        if e.source == "/" {
            return Err(MountTableError::Invalid(
                "/ cannot be a mount point: mount the top-level directories".into(),
            ));
        }
        if e.destinations.is_empty() {
            return Err(MountTableError::Invalid(format!("{} has no destination", e.source)));
        }
        if e.destinations.len() > MAX_DESTINATIONS_PER_ENTRY {
            return Err(MountTableError::Invalid(format!(
                "{} has {} destinations, more than {MAX_DESTINATIONS_PER_ENTRY}",
                e.source,
                e.destinations.len()
            )));
        }
        if e.mode > 0o7777 {
            return Err(MountTableError::Invalid(format!(
                "mode {:o} is not a permission",
                e.mode
            )));
        }
        for d in &mut e.destinations {
            d.path = normalize(&d.path)?;
            if !nameservices.contains(&d.nameservice) {
                return Err(MountTableError::UnknownNameservice(d.nameservice.clone()));
            }
        }
        for (i, d) in e.destinations.iter().enumerate() {
            if e.destinations[..i].iter().any(|o| o.nameservice == d.nameservice) {
                return Err(MountTableError::Invalid(format!(
                    "{} names nameservice {} twice",
                    e.source, d.nameservice
                )));
            }
        }
        for other in self.entries.values().filter(|o| o.source != e.source) {
            for d in &e.destinations {
                for od in other.destinations.iter().filter(|od| od.nameservice == d.nameservice) {
                    if within(&d.path, &od.path) || within(&od.path, &d.path) {
                        return Err(MountTableError::Overlap(format!(
                            "{} -> {}:{} overlaps {} -> {}:{}; a nameservice path belongs to one mount point",
                            e.source, d.nameservice, d.path, other.source, od.nameservice, od.path
                        )));
                    }
                }
            }
        }
        Ok(e)
    }

    /// The entry owning `path` (normalized) by longest prefix, and the
    /// destinations of `path` in the order the entry picks; `None` if no
    /// mount point covers it.
    pub fn resolve<'p>(&self, path: &'p str) -> Option<Resolved<'_, 'p>> {
        let (entry, rest) = self.longest_prefix(path)?;
        let translated = |d: &Destination| Destination {
            nameservice: d.nameservice.clone(),
            path: join(&d.path, rest),
        };
        let candidates = match entry.destinations.as_slice() {
            // Most entries: no order to compute.
            [only] => vec![translated(only)],
            _ => order_destinations(entry, rest).into_iter().map(translated).collect(),
        };
        Some(Resolved {
            entry,
            rest,
            candidates,
        })
    }

    /// The entry owning `path` (normalized) by longest prefix, and the
    /// components of `path` below it, joined (empty at the mount point);
    /// `None` if no mount point covers it. Allocates nothing.
    pub fn longest_prefix<'p>(&self, path: &'p str) -> Option<(&MountEntry, &'p str)> {
        let mut end = path.len();
        loop {
            let prefix = if end == 0 { "/" } else { &path[..end] };
            if let Some(entry) = self.entries.get(prefix) {
                return Some((entry, path[end..].trim_start_matches('/')));
            }
            if end == 0 {
                return None;
            }
            end = path[..end].rfind('/').unwrap_or(0);
        }
    }

    /// The names of mount points directly below `dir` (normalized) that a
    /// listing of `dir` shows as directories, sorted: `/a/b` lists under
    /// `/a` as `b`, and `/x/y/z` lists under `/x` as `y`.
    pub fn child_mount_names(&self, dir: &str) -> Vec<String> {
        let prefix = if dir == "/" { "/".to_string() } else { format!("{dir}/") };
        let mut names: Vec<String> = self
            .entries
            .range(prefix.clone()..)
            .take_while(|(s, _)| s.starts_with(&prefix))
            .map(|(s, _)| s[prefix.len()..].split('/').next().unwrap_or_default().to_string())
            .collect();
        // Sources sort by whole path (`/a-x` before `/a/b`), names by name.
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The entries strictly below `dir` (normalized), in source order.
    pub fn entries_below<'a>(&'a self, dir: &str) -> impl Iterator<Item = &'a MountEntry> + 'a {
        let prefix = if dir == "/" { "/".to_string() } else { format!("{dir}/") };
        self.entries
            .range(prefix.clone()..)
            .take_while(move |(s, _)| s.starts_with(&prefix))
            .map(|(_, e)| e)
    }

    /// Which mount point owns `path` of `nameservice` (the inverse
    /// mapping: a nameservice path lies in at most one destination).
    pub fn owner_of(&self, nameservice: &str, path: &str) -> Option<&MountEntry> {
        self.entries.values().find(|e| {
            e.destinations
                .iter()
                .any(|d| d.nameservice == nameservice && within(path, &d.path))
        })
    }

    /// The federated path of `path` of `nameservice` (through the mount
    /// point that owns it, [`MountTable::owner_of`]), if one does.
    pub fn federated_path(&self, nameservice: &str, path: &str) -> Option<String> {
        self.entries.values().find_map(|e| {
            let d = e
                .destinations
                .iter()
                .find(|d| d.nameservice == nameservice && within(path, &d.path))?;
            let rest = path[d.path.len()..].trim_start_matches('/');
            Some(join(&e.source, rest))
        })
    }
}

/// The entry's destinations, the one its order picks for `rest` first.
/// HASH and HASH_ALL use rendezvous hashing (each destination scored by a
/// hash of itself and the key; the highest wins), so adding a destination
/// moves only the keys it wins.
fn order_destinations<'a>(entry: &'a MountEntry, rest: &str) -> Vec<&'a Destination> {
    let mut ds: Vec<&Destination> = entry.destinations.iter().collect();
    if ds.len() < 2 || rest.is_empty() {
        return ds;
    }
    let key = match entry.order {
        Order::Hash => rest.split('/').next().unwrap_or(rest),
        Order::HashAll => rest.rsplit('/').next().unwrap_or(rest),
        Order::Random | Order::Space => return ds,
    };
    ds.sort_by_key(|d| std::cmp::Reverse(stable_hash(&[&d.nameservice, &d.path, key])));
    ds
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn nss() -> BTreeSet<String> {
        ["ns1", "ns2", "ns3"].iter().map(|s| s.to_string()).collect()
    }

    pub(crate) fn entry(source: &str, dests: &[(&str, &str)]) -> MountEntry {
        MountEntry {
            source: source.into(),
            destinations: dests
                .iter()
                .map(|(n, p)| Destination {
                    nameservice: n.to_string(),
                    path: p.to_string(),
                })
                .collect(),
            order: Order::Hash,
            read_only: false,
            owner: "hdfs".into(),
            group: "supergroup".into(),
            mode: 0o755,
            quota: MountQuota::default(),
        }
    }

    fn table() -> MountTable {
        let mut t = MountTable::new();
        for e in [
            entry("/user", &[("ns1", "/user")]),
            entry("/data", &[("ns2", "/data")]),
            entry("/data/logs", &[("ns3", "/logs")]),
            entry("/shared", &[("ns1", "/shared"), ("ns2", "/shared")]),
        ] {
            t.apply(MountTableChange::Add(e), &nss()).unwrap();
        }
        t
    }

    #[test]
    fn longest_prefix_wins_component_by_component() {
        let t = table();
        let r = t.resolve("/data/logs/a").unwrap();
        assert_eq!(r.entry.source, "/data/logs");
        assert_eq!(
            r.candidates[0],
            Destination {
                nameservice: "ns3".into(),
                path: "/logs/a".into()
            }
        );
        let r = t.resolve("/data/x").unwrap();
        assert_eq!((r.entry.source.as_str(), r.rest), ("/data", "x"));
        assert_eq!(t.resolve("/data").unwrap().candidates[0].path, "/data");
        assert!(t.resolve("/database").is_none(), "/data must not own /database");
        assert!(t.resolve("/").is_none());
        assert_eq!(t.version(), 4);
    }

    #[test]
    fn bad_changes_leave_the_table_unchanged() {
        let mut t = table();
        let before = t.clone();
        let bad = [
            (MountTableChange::Add(entry("/user", &[("ns2", "/u")])), "exists"),
            (MountTableChange::Add(entry("relative", &[("ns2", "/r")])), "absolute"),
            (MountTableChange::Add(entry("/a/../b", &[("ns2", "/r")])), "not allowed"),
            (
                MountTableChange::Add(entry("/", &[("ns2", "/r")])),
                "cannot be a mount point",
            ),
            (MountTableChange::Add(entry("/x", &[])), "no destination"),
            (MountTableChange::Add(entry("/x", &[("ns9", "/x")])), "ns9"),
            (
                MountTableChange::Add(entry("/x", &[("ns1", "/x"), ("ns1", "/y")])),
                "twice",
            ),
            (MountTableChange::Add(entry("/x", &[("ns1", "/user/x")])), "overlaps"),
            (MountTableChange::Add(entry("/x", &[("ns2", "/")])), "overlaps"),
            (MountTableChange::Update(entry("/nope", &[("ns1", "/nope")])), "/nope"),
            (MountTableChange::Remove { source: "/nope".into() }, "/nope"),
            (
                MountTableChange::DisableNameservice {
                    nameservice: "ns9".into(),
                    disabled: true,
                },
                "ns9",
            ),
        ];
        for (change, says) in bad {
            let err = t
                .apply(change.clone(), &nss())
                .expect_err(&format!("{change:?} accepted"));
            assert!(err.to_string().contains(says), "{change:?}: {err} does not say {says}");
            assert!(!err.is_retryable());
            assert_eq!(t, before, "{change:?} changed the table");
        }
    }

    #[test]
    fn an_update_may_keep_its_own_destinations() {
        let mut t = table();
        let mut e = entry("/user", &[("ns1", "/user")]);
        e.read_only = true;
        t.apply(MountTableChange::Update(e), &nss()).unwrap();
        assert!(t.get("/user").unwrap().read_only);
        t.apply(
            MountTableChange::Remove {
                source: "/user/".into(),
            },
            &nss(),
        )
        .unwrap();
        assert!(t.resolve("/user/a").is_none());
        assert_eq!(t.version(), 6);
    }

    #[test]
    fn listings_show_mount_points_and_owners_map_back() {
        let mut t = table();
        t.apply(MountTableChange::Add(entry("/x/y/z", &[("ns3", "/z")])), &nss())
            .unwrap();
        assert_eq!(t.child_mount_names("/"), ["data", "shared", "user", "x"]);
        assert_eq!(t.child_mount_names("/data"), ["logs"]);
        assert_eq!(t.child_mount_names("/x"), ["y"]);
        assert!(t.child_mount_names("/user").is_empty());
        assert_eq!(t.owner_of("ns3", "/logs/today").unwrap().source, "/data/logs");
        assert_eq!(t.owner_of("ns2", "/shared").unwrap().source, "/shared");
        assert!(t.owner_of("ns1", "/elsewhere").is_none());
        assert_eq!(t.federated_path("ns3", "/logs/today").unwrap(), "/data/logs/today");
        assert_eq!(t.federated_path("ns3", "/z").unwrap(), "/x/y/z");
        assert_eq!(t.federated_path("ns2", "/shared").unwrap(), "/shared");
        assert_eq!(t.federated_path("ns1", "/elsewhere"), None);
    }

    #[test]
    fn hash_orders_spread_and_agree() {
        let mut t = table();
        let mut all = entry("/spread", &[("ns1", "/spread"), ("ns2", "/spread"), ("ns3", "/spread")]);
        all.order = Order::HashAll;
        t.apply(MountTableChange::Add(all), &nss()).unwrap();
        // HASH: everything under one top-level directory goes one way.
        let first = t.resolve("/shared/dir").unwrap().candidates[0].nameservice.clone();
        for f in 0..20 {
            let path = format!("/shared/dir/sub/f{f}");
            let r = t.resolve(&path).unwrap();
            assert_eq!(r.candidates[0].nameservice, first);
            assert_eq!(r.candidates.len(), 2);
        }
        // HASH_ALL: the files of one directory use every destination.
        let used: BTreeSet<String> = (0..60)
            .map(|f| {
                t.resolve(&format!("/spread/d/f{f}")).unwrap().candidates[0]
                    .nameservice
                    .clone()
            })
            .collect();
        assert_eq!(used.len(), 3, "HASH_ALL used {used:?}");
        // The same answer from a copy (another router, an SDK).
        let copy: MountTable = bincode::deserialize(&bincode::serialize(&t).unwrap()).unwrap();
        for f in 0..60 {
            let p = format!("/spread/d/f{f}");
            assert_eq!(copy.resolve(&p), t.resolve(&p));
        }
    }

    #[test]
    fn disabled_nameservices_are_recorded() {
        let mut t = table();
        let ch = |d| MountTableChange::DisableNameservice {
            nameservice: "ns2".into(),
            disabled: d,
        };
        t.apply(ch(true), &nss()).unwrap();
        assert!(t.is_disabled("ns2"));
        assert_eq!(t.disabled_nameservices().collect::<Vec<_>>(), ["ns2"]);
        t.apply(ch(false), &nss()).unwrap();
        assert!(!t.is_disabled("ns2"));
    }

    #[test]
    fn order_names_round_trip() {
        for o in [Order::Hash, Order::HashAll, Order::Random, Order::Space] {
            assert_eq!(Order::parse(o.name()).unwrap(), o);
        }
        assert!(Order::parse("LOCAL").is_err());
    }
}
