//! Which paths this nameservice owns in a federation: the destinations of
//! the routers' mount table that lead into it, at the table's version, in
//! the replicated state (one meta row), so that every member answers alike
//! and a new leader knows them.
//!
//! Why: a client that routes calls by a copy of the mount table (a router,
//! or the SDK in direct mode) may hold a stale copy. A call it routed here
//! carries the table version it used; a path this nameservice does not own
//! is then refused with [`FsError::NotOwned`], naming the version the
//! nameservice knows, so the caller refreshes its table and routes again,
//! and never writes into the wrong nameservice. Calls that carry no version
//! (a client of this nameservice alone) are not checked: the nameservice
//! stays a whole file system to them, as a federated NameNode does.
//!
//! The check that counts is made when a routed write is planned, against
//! the same state the write's delta is applied to: `Planner::check_owned`
//! refuses the write, or adds the guard [`Mutation::OwnedAt`], which fails
//! (and the write is planned again, and refused) if the row changed
//! between plan and apply. So no routed write is applied after the
//! nameservice was told it no longer owns the path, whatever the timing.
//! Reads are checked before they run, against applied state.
//!
//! The routers set the row through `Op::SetOwnership` (superuser only):
//! before a mount-table change commits, the nameservices that lose paths
//! are told their smaller set; after it, every nameservice its new set. A
//! push older than the row's version changes nothing, so pushes may race.
//! A nameservice never told owns everything.

use raftfs_proto::{FsError, Op, OpResult};
use serde::{Deserialize, Serialize};

use super::delta::Mutation;
use super::plan::Planner;
use crate::store::{ReadView, StoreError};

/// Meta row of the owned prefixes.
pub const META_OWNERSHIP: &str = "fed.owned";
/// Most prefixes one nameservice is told it owns (a mount table's entries).
pub const MAX_OWNED_PREFIXES: usize = 100_000;

/// What this nameservice owns, as the routers last said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ownership {
    /// The mount table's version the set is of.
    pub version: u64,
    /// Normalized absolute paths; a path owns itself and everything below.
    pub prefixes: Vec<String>,
    /// How many times the row was replaced (set when applied): what the
    /// guard of a routed write compares, since a revocation keeps the
    /// table's version.
    pub changes: u64,
}

impl Ownership {
    /// Whether `path` (absolute) lies in one of the prefixes.
    pub fn owns(&self, path: &str) -> bool {
        self.prefixes.iter().any(|p| within(path, p))
    }
}

/// Whether absolute path `inner` is `outer` or lies below it (`outer`
/// normalized, as `FsPath` leaves it).
pub fn within(inner: &str, outer: &str) -> bool {
    let inner = inner.trim_end_matches('/');
    let inner = if inner.is_empty() { "/" } else { inner };
    outer == "/" || inner == outer || (inner.starts_with(outer) && inner.as_bytes().get(outer.len()) == Some(&b'/'))
}

/// The ownership row, if the routers ever set it.
pub fn ownership<V: ReadView + ?Sized>(view: &V) -> Result<Option<Ownership>, StoreError> {
    view.meta(META_OWNERSHIP)?
        .map(|raw| {
            bincode::deserialize(&raw).map_err(|e| StoreError::Corrupt {
                table: "meta",
                detail: format!("{META_OWNERSHIP}: {e}"),
            })
        })
        .transpose()
}

/// Refuse `op`, routed by mount-table version `routed_by` (0: not routed,
/// never refused), if it names a path outside `owned`.
pub fn check_routed(owned: Option<&Ownership>, routed_by: u64, op: &Op) -> Result<(), FsError> {
    let Some(owned) = owned.filter(|_| routed_by > 0) else {
        return Ok(());
    };
    let others: Vec<&str> = match op {
        Op::Rename { dst, .. } | Op::Rename2 { dst, .. } => vec![dst.as_str()],
        Op::Concat { sources, .. } => sources.iter().map(String::as_str).collect(),
        _ => Vec::new(),
    };
    for path in std::iter::once(op.src_path()).chain(others) {
        if !path.starts_with('/') || matches!(op, Op::SetDatanodeAdmin { .. }) {
            continue; // no path (renewLease, tokens) or not a path (a DataNode's name)
        }
        if path.starts_with("/.reserved/") {
            return Err(FsError::Unroutable(format!(
                "{path}: inode paths are per nameservice and cannot be routed by a mount table"
            )));
        }
        if !owned.owns(path) {
            return Err(FsError::NotOwned {
                version: owned.version,
                message: format!(
                    "{path} is not in this nameservice at mount table version {} (the call was routed by \
                     version {routed_by}): refresh the mount table and route again",
                    owned.version
                ),
            });
        }
    }
    Ok(())
}

impl<V: ReadView + ?Sized> Planner<'_, V> {
    /// Refuse this write if the caller routed it (by `ctx.routed_by`) to a
    /// path this nameservice does not own; else guard it on the ownership
    /// row staying as read (see the module docs).
    pub(crate) fn check_owned(&mut self, op: &Op) -> Result<(), FsError> {
        if self.ctx.routed_by == 0 {
            return Ok(());
        }
        let owned = ownership(self.view)?;
        check_routed(owned.as_ref(), self.ctx.routed_by, op)?;
        self.muts.push(Mutation::OwnedAt {
            changes: owned.map_or(0, |o| o.changes),
        });
        Ok(())
    }

    pub(crate) fn set_ownership(&mut self, version: u64, prefixes: &[String]) -> Result<OpResult, FsError> {
        self.caller
            .require_superuser(" to set the paths this nameservice owns")?;
        if prefixes.len() > MAX_OWNED_PREFIXES {
            return Err(FsError::InvalidArgument(format!(
                "{} owned prefixes, more than {MAX_OWNED_PREFIXES}",
                prefixes.len()
            )));
        }
        for p in prefixes {
            let normal = p.starts_with('/')
                && (p == "/" || !p.ends_with('/'))
                && p.split('/')
                    .skip(1)
                    .all(|c| p == "/" || (!c.is_empty() && c != "." && c != ".."));
            if !normal {
                return Err(FsError::InvalidPath(format!(
                    "owned prefix {p:?} is not a normalized absolute path"
                )));
            }
        }
        let current = ownership(self.view)?;
        if current.is_some_and(|c| c.version > version) {
            return Ok(OpResult::Unit); // an older push, overtaken
        }
        let mut prefixes = prefixes.to_vec();
        prefixes.sort();
        prefixes.dedup();
        self.muts.push(Mutation::SetOwnership(Ownership {
            version,
            prefixes,
            changes: 0,
        }));
        Ok(OpResult::Unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned() -> Ownership {
        Ownership {
            version: 7,
            prefixes: vec!["/data".into(), "/user/a".into()],
            changes: 1,
        }
    }

    #[test]
    fn routed_calls_outside_the_prefixes_are_refused() {
        let o = owned();
        let get = |p: &str| Op::GetFileInfo { path: p.into() };
        assert!(check_routed(Some(&o), 7, &get("/data/x")).is_ok());
        assert!(check_routed(Some(&o), 7, &get("/data")).is_ok());
        assert!(
            check_routed(Some(&o), 3, &get("/user/a/b")).is_ok(),
            "an older table that routed right"
        );
        let e = check_routed(Some(&o), 7, &get("/database")).unwrap_err();
        assert!(matches!(e, FsError::NotOwned { version: 7, .. }), "{e:?}");
        assert!(
            check_routed(Some(&o), 0, &get("/elsewhere")).is_ok(),
            "not routed: not checked"
        );
        assert!(
            check_routed(None, 7, &get("/elsewhere")).is_ok(),
            "never told: owns everything"
        );
        let mv = Op::Rename2 {
            src: "/data/a".into(),
            dst: "/other/a".into(),
            overwrite: false,
        };
        assert!(matches!(check_routed(Some(&o), 7, &mv), Err(FsError::NotOwned { .. })));
        assert!(check_routed(Some(&o), 7, &Op::RenewLease).is_ok());
        assert!(matches!(
            check_routed(Some(&o), 7, &get("/.reserved/.inodes/5")),
            Err(FsError::Unroutable(_))
        ));
    }
}
