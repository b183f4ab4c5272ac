//! The federation's replicated state: the nameservices the routers know
//! (name, NamespaceID, BlockPoolID, members) and the mount table over them.
//! Pure: the mount-table Raft group applies [`FederationChange`]s to it in
//! log order, and every router and SDK client holding the same
//! [`Federation::version`] routes every path the same way.
//!
//! Guarantees:
//! * A change is checked whole; a refused one changes nothing (not even
//!   the version) and says why with a [`MountTableError`].
//! * Mount entries name only nameservices that exist, and a nameservice
//!   cannot be removed while an entry leads into it.
//! * Every applied change bumps [`Federation::version`] by one.
//! * A removed nameservice leaves a record of its block pool
//!   ([`RemovedNameservice`], the newest [`MAX_REMOVED_NAMESERVICES_KEPT`]):
//!   DataNodes that follow the routers delete a pool only when it is
//!   recorded removed (empty, or with `force` whatever it holds), never
//!   because a table lacks it, so a new or mistaken router group cannot
//!   make them drop data. Registering the same block pool again forgets
//!   the record.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::MountTableError;
use crate::mount_table::{MountTable, MountTableChange};

/// Most nameservices one federation holds.
pub const MAX_NAMESERVICES: usize = 1024;
/// Longest nameservice name, in bytes.
pub const MAX_NAMESERVICE_NAME_BYTES: usize = 64;
/// Most members one nameservice lists.
pub const MAX_MEMBERS_PER_NAMESERVICE: usize = 16;
/// Most removed nameservices remembered (the oldest is forgotten first).
pub const MAX_REMOVED_NAMESERVICES_KEPT: usize = 1024;

/// A nameservice the federation routes to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameserviceRecord {
    pub name: String,
    pub namespace_id: u64,
    pub block_pool_id: String,
    /// Member id to `host:port`.
    pub members: BTreeMap<u64, String>,
}

/// A change to the federation, as the mount-table group's log carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FederationChange {
    Mount(MountTableChange),
    AddNameservice(NameserviceRecord),
    /// Replace a known nameservice's members (after a membership change).
    UpdateNameservice(NameserviceRecord),
    /// Forget a nameservice; refused while a mount entry leads into it.
    /// DataNodes delete its block pool where they hold no replica of it.
    RemoveNameservice {
        name: String,
    },
    // ---- appended (the log carries these; keep the order) ----
    /// As `RemoveNameservice`, and DataNodes delete its block pool
    /// whatever it holds; of a nameservice already removed, say so for
    /// the pools DataNodes kept because they were not empty.
    ForceRemoveNameservice {
        name: String,
    },
    /// A change to the routers' delegation token table
    /// ([`crate::router_tokens`]), which the routers' state machine applies
    /// itself: never to the federation, and never from `RouterAdmin`.
    DelegationTokens(crate::router_tokens::TokenCommand),
}

/// A nameservice the federation removed: what DataNodes need to delete
/// its block pool, even those that were down when it happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemovedNameservice {
    pub name: String,
    pub namespace_id: u64,
    pub block_pool_id: String,
    /// Delete the pool even where it holds replicas (`-force`).
    pub force: bool,
    /// The federation version that removed it (or last forced it).
    pub version: u64,
}

/// Nameservices and the mount table, at a version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Federation {
    nameservices: BTreeMap<String, NameserviceRecord>,
    mounts: MountTable,
    version: u64,
    /// Block pool id → the nameservice removed with it.
    removed: BTreeMap<String, RemovedNameservice>,
}

/// A [`Federation`] as routers stored it before removed nameservices were
/// remembered: snapshots of that format still load.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct FederationWithoutRemoved {
    nameservices: BTreeMap<String, NameserviceRecord>,
    mounts: MountTable,
    version: u64,
}

impl From<FederationWithoutRemoved> for Federation {
    fn from(f: FederationWithoutRemoved) -> Federation {
        Federation {
            nameservices: f.nameservices,
            mounts: f.mounts,
            version: f.version,
            removed: BTreeMap::new(),
        }
    }
}

/// A nameservice name: letters, digits, `-` and `_`, as HDFS's
/// `dfs.nameservices` ids.
pub fn check_nameservice_name(name: &str) -> Result<(), MountTableError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAMESERVICE_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(MountTableError::Invalid(format!(
            "nameservice name {name:?} is not 1 to {MAX_NAMESERVICE_NAME_BYTES} letters, digits, '-' or '_'"
        )))
    }
}

impl NameserviceRecord {
    fn check(&self) -> Result<(), MountTableError> {
        check_nameservice_name(&self.name)?;
        if self.namespace_id == 0 {
            return Err(MountTableError::Invalid(format!(
                "nameservice {} has NamespaceID 0",
                self.name
            )));
        }
        if self.block_pool_id.is_empty() {
            return Err(MountTableError::Invalid(format!(
                "nameservice {} has no BlockPoolID",
                self.name
            )));
        }
        if self.members.is_empty() || self.members.len() > MAX_MEMBERS_PER_NAMESERVICE {
            return Err(MountTableError::Invalid(format!(
                "nameservice {} lists {} members (1 to {MAX_MEMBERS_PER_NAMESERVICE})",
                self.name,
                self.members.len()
            )));
        }
        for addr in self.members.values() {
            raftfs_proto::admin::check_member_addr(addr).map_err(|e| MountTableError::Invalid(e.to_string()))?;
        }
        Ok(())
    }
}

impl Federation {
    pub fn new() -> Federation {
        Federation::default()
    }

    /// Bumped by every applied change.
    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn mounts(&self) -> &MountTable {
        &self.mounts
    }

    pub fn nameservices(&self) -> impl Iterator<Item = &NameserviceRecord> {
        self.nameservices.values()
    }

    pub fn nameservice(&self, name: &str) -> Option<&NameserviceRecord> {
        self.nameservices.get(name)
    }

    /// The nameservices removed, by block pool id (the newest
    /// [`MAX_REMOVED_NAMESERVICES_KEPT`]).
    pub fn removed(&self) -> &BTreeMap<String, RemovedNameservice> {
        &self.removed
    }

    /// The latest removal of a nameservice named `name`, if remembered.
    pub fn last_removed(&self, name: &str) -> Option<&RemovedNameservice> {
        self.removed
            .values()
            .filter(|r| r.name == name)
            .max_by_key(|r| r.version)
    }

    /// The sources of the mount entries that lead into nameservice `name`.
    pub fn mounts_into(&self, name: &str) -> Vec<&str> {
        self.mounts
            .entries()
            .filter(|e| e.destinations.iter().any(|d| d.nameservice == name))
            .map(|e| e.source.as_str())
            .collect()
    }

    /// The paths of nameservice `name` that the mount table leads into
    /// (every destination in it), sorted: what it owns at this version.
    pub fn owned_by(&self, name: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .mounts
            .entries()
            .flat_map(|e| e.destinations.iter())
            .filter(|d| d.nameservice == name)
            .map(|d| d.path.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Check `change` and apply it, bumping the version; or change nothing and say why.
    pub fn apply(&mut self, change: FederationChange) -> Result<(), MountTableError> {
        match change {
            FederationChange::Mount(c) => {
                let names: BTreeSet<String> = self.nameservices.keys().cloned().collect();
                self.mounts.apply(c, &names)?;
            }
            FederationChange::AddNameservice(r) => {
                r.check()?;
                if self.nameservices.contains_key(&r.name) {
                    return Err(MountTableError::NameserviceExists(r.name));
                }
                if let Some(o) = self.nameservices.values().find(|o| o.namespace_id == r.namespace_id) {
                    return Err(MountTableError::Invalid(format!(
                        "nameservice {} has the NamespaceID {} of {}",
                        r.name, r.namespace_id, o.name
                    )));
                }
                if self.nameservices.len() >= MAX_NAMESERVICES {
                    return Err(MountTableError::Invalid(format!(
                        "the federation holds {MAX_NAMESERVICES} nameservices, its limit"
                    )));
                }
                self.removed.remove(&r.block_pool_id);
                self.nameservices.insert(r.name.clone(), r);
            }
            FederationChange::UpdateNameservice(r) => {
                r.check()?;
                match self.nameservices.get_mut(&r.name) {
                    Some(o) if o.namespace_id == r.namespace_id && o.block_pool_id == r.block_pool_id => *o = r,
                    Some(o) => {
                        return Err(MountTableError::Invalid(format!(
                            "nameservice {} is NamespaceID {} / {}, not {} / {}",
                            o.name, o.namespace_id, o.block_pool_id, r.namespace_id, r.block_pool_id
                        )))
                    }
                    None => return Err(MountTableError::UnknownNameservice(r.name)),
                }
            }
            FederationChange::RemoveNameservice { name } => self.remove_nameservice(name, false)?,
            FederationChange::ForceRemoveNameservice { name } => self.remove_nameservice(name, true)?,
            FederationChange::DelegationTokens(_) => {
                return Err(MountTableError::Invalid(
                    "delegation token changes are the routers' token table's, not the federation's".into(),
                ))
            }
        }
        self.version += 1;
        Ok(())
    }

    /// Remove nameservice `name` and remember its block pool (see the
    /// module docs); forcing an already removed one marks its record forced.
    fn remove_nameservice(&mut self, name: String, force: bool) -> Result<(), MountTableError> {
        let version = self.version + 1;
        if !self.nameservices.contains_key(&name) {
            let gone = self.last_removed(&name).map(|r| r.block_pool_id.clone());
            return match gone.and_then(|bpid| self.removed.get_mut(&bpid)) {
                Some(r) if force => {
                    r.force = true;
                    r.version = version;
                    Ok(())
                }
                _ => Err(MountTableError::UnknownNameservice(name)),
            };
        }
        let using = self.mounts_into(&name);
        if !using.is_empty() {
            let why = format!("mount points lead into it: {}", using.join(", "));
            return Err(MountTableError::NameserviceInUse(name, why));
        }
        if self.mounts.is_disabled(&name) {
            let names: BTreeSet<String> = self.nameservices.keys().cloned().collect();
            self.mounts.apply(
                MountTableChange::DisableNameservice {
                    nameservice: name.clone(),
                    disabled: false,
                },
                &names,
            )?;
        }
        let r = self.nameservices.remove(&name).expect("checked above");
        self.removed.insert(
            r.block_pool_id.clone(),
            RemovedNameservice {
                name: r.name,
                namespace_id: r.namespace_id,
                block_pool_id: r.block_pool_id,
                force,
                version,
            },
        );
        while self.removed.len() > MAX_REMOVED_NAMESERVICES_KEPT {
            let oldest = self
                .removed
                .values()
                .min_by_key(|r| r.version)
                .map(|r| r.block_pool_id.clone())
                .expect("not empty");
            self.removed.remove(&oldest);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mount_table::tests::entry;

    fn ns(name: &str, id: u64) -> NameserviceRecord {
        NameserviceRecord {
            name: name.into(),
            namespace_id: id,
            block_pool_id: format!("BP-{id}"),
            members: [(1, "127.0.0.1:8020".to_string())].into(),
        }
    }

    fn mount(source: &str, nameservice: &str) -> FederationChange {
        FederationChange::Mount(MountTableChange::Add(entry(source, &[(nameservice, source)])))
    }

    #[test]
    fn mounts_need_their_nameservice_and_keep_it() {
        let mut f = Federation::new();
        assert_eq!(
            f.apply(mount("/data", "ns1")),
            Err(MountTableError::UnknownNameservice("ns1".into()))
        );
        assert_eq!(f.version(), 0, "a refused change leaves the version");
        f.apply(FederationChange::AddNameservice(ns("ns1", 7))).unwrap();
        f.apply(mount("/data", "ns1")).unwrap();
        assert_eq!(f.version(), 2);
        let before = f.clone();
        match f.apply(FederationChange::RemoveNameservice { name: "ns1".into() }) {
            Err(MountTableError::NameserviceInUse(n, why)) => {
                assert_eq!(n, "ns1");
                assert!(why.contains("/data"), "{why}");
            }
            r => panic!("{r:?}"),
        }
        assert_eq!(f, before, "the federation is unchanged");
        f.apply(FederationChange::Mount(MountTableChange::Remove {
            source: "/data".into(),
        }))
        .unwrap();
        f.apply(FederationChange::RemoveNameservice { name: "ns1".into() })
            .unwrap();
        assert_eq!(f.nameservices().count(), 0);
        assert_eq!(f.version(), 4);
    }

    #[test]
    fn removed_nameservices_are_remembered_by_block_pool() {
        let mut f = Federation::new();
        f.apply(FederationChange::AddNameservice(ns("ns1", 7))).unwrap();
        f.apply(FederationChange::AddNameservice(ns("ns2", 8))).unwrap();
        f.apply(FederationChange::RemoveNameservice { name: "ns1".into() })
            .unwrap();
        let r = &f.removed()["BP-7"];
        assert_eq!((r.name.as_str(), r.force, r.version), ("ns1", false, 3));
        // Forcing it afterwards marks the record; an unknown name is refused.
        f.apply(FederationChange::ForceRemoveNameservice { name: "ns1".into() })
            .unwrap();
        assert_eq!((f.removed()["BP-7"].force, f.removed()["BP-7"].version), (true, 4));
        let before = f.clone();
        assert_eq!(
            f.apply(FederationChange::RemoveNameservice { name: "ns1".into() }),
            Err(MountTableError::UnknownNameservice("ns1".into())),
            "removing it again without -force"
        );
        assert_eq!(
            f.apply(FederationChange::ForceRemoveNameservice { name: "nsX".into() }),
            Err(MountTableError::UnknownNameservice("nsX".into()))
        );
        assert_eq!(f, before);
        f.apply(FederationChange::ForceRemoveNameservice { name: "ns2".into() })
            .unwrap();
        assert!(f.removed()["BP-8"].force);
        // The same pool registered again is no longer removed.
        f.apply(FederationChange::AddNameservice(ns("ns1", 7))).unwrap();
        assert!(!f.removed().contains_key("BP-7"));
        assert!(f.removed().contains_key("BP-8"));
    }

    #[test]
    fn the_oldest_removed_nameservice_is_forgotten_first() {
        let mut f = Federation::new();
        for i in 1..=MAX_REMOVED_NAMESERVICES_KEPT as u64 + 2 {
            f.apply(FederationChange::AddNameservice(ns("ns", i))).unwrap();
            f.apply(FederationChange::RemoveNameservice { name: "ns".into() })
                .unwrap();
        }
        assert_eq!(f.removed().len(), MAX_REMOVED_NAMESERVICES_KEPT);
        assert!(!f.removed().contains_key("BP-1") && !f.removed().contains_key("BP-2"));
        assert!(f.removed().contains_key("BP-3"));
    }

    #[test]
    fn an_old_snapshot_loads() {
        #[derive(Serialize)]
        struct Old {
            nameservices: BTreeMap<String, NameserviceRecord>,
            mounts: MountTable,
            version: u64,
        }
        let mut f = Federation::new();
        f.apply(FederationChange::AddNameservice(ns("ns1", 7))).unwrap();
        let old = Old {
            nameservices: f.nameservices.clone(),
            mounts: f.mounts.clone(),
            version: f.version,
        };
        let bytes = bincode::serialize(&old).unwrap();
        let back: Federation = bincode::deserialize::<FederationWithoutRemoved>(&bytes).unwrap().into();
        assert_eq!(back, f);
    }

    #[test]
    fn nameservices_are_checked() {
        let mut f = Federation::new();
        f.apply(FederationChange::AddNameservice(ns("ns1", 7))).unwrap();
        let cases = [
            (ns("ns1", 8), "already exists"),
            (ns("ns2", 7), "NamespaceID 7 of ns1"),
            (ns("bad name", 9), "is not 1 to"),
            (ns("ns3", 0), "NamespaceID 0"),
            (
                NameserviceRecord {
                    members: BTreeMap::new(),
                    ..ns("ns4", 10)
                },
                "lists 0 members",
            ),
            (
                NameserviceRecord {
                    members: [(1, "no-port".to_string())].into(),
                    ..ns("ns5", 11)
                },
                "HOST:PORT",
            ),
        ];
        for (r, want) in cases {
            let e = f.apply(FederationChange::AddNameservice(r.clone())).unwrap_err();
            assert!(e.to_string().contains(want), "{r:?}: {e}");
        }
        assert_eq!(f.version(), 1);
        let moved = NameserviceRecord {
            members: [(1, "10.0.0.1:8020".to_string()), (2, "10.0.0.2:8020".to_string())].into(),
            ..ns("ns1", 7)
        };
        f.apply(FederationChange::UpdateNameservice(moved.clone())).unwrap();
        assert_eq!(f.nameservice("ns1"), Some(&moved));
        let other = f.apply(FederationChange::UpdateNameservice(ns("ns1", 99))).unwrap_err();
        assert!(other.to_string().contains("NamespaceID 7"), "{other}");
    }
}
