//! [`LeaderEpoch`]: what a leader knows of the writes it planned and that
//! are not applied yet, for one term (`--exec leader`).
//!
//! * Counters ([`IdAllocator`]): inode ids, block ids and generation stamps
//!   are handed out by atomic counters that start at the committed values
//!   when the term's planning starts, so two plans never get the same id.
//!   A plan records the highest id it took (`Advance*` mutations, merged
//!   with max), so the committed counters follow. An id handed to a plan
//!   that then fails is never used: ids may have gaps, never repeats.
//! * Quota ([`QuotaLedger`]): for each directory with a quota that a write
//!   in flight charged, its usage counting every such write's positive
//!   charges (space and names taken before they are committed) but only
//!   the committed negative ones (space freed only once it is). A write
//!   reserves its charges atomically against the limits, so concurrent
//!   writes never overrun a quota together, and a write that is not applied
//!   gives its reservation back. An entry exists only while a write that
//!   charged it is in flight; when it is absent the committed value is
//!   current, so it is read from the store (latest commit) when first needed.
//! * Log time ([`LeaderEpoch::clock`]): monotonic from the last applied time.
//!
//! A new epoch starts for each term, after the term's blank entry is
//! applied: everything an earlier term proposed is then committed (and in
//! the store) or gone, so committed counters and usage are exact. Writes
//! of an earlier epoch keep their own epoch until they finish.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use crate::inode::InodeId;
use crate::namespace::{
    apply::last_time, read_counter, IdSource, Mutation, PendingUsage, META_NEXT_BLOCK_ID, META_NEXT_GEN_STAMP,
    META_NEXT_INODE_ID,
};
use crate::store::{ReadView, StoreError};

/// The leader's counters (see the module docs).
#[derive(Debug)]
pub struct IdAllocator {
    inode: AtomicU64,
    block: AtomicU64,
    gen_stamp: AtomicU64,
    delegation_seq: AtomicU64,
}

impl IdAllocator {
    fn load<V: ReadView + ?Sized>(view: &V) -> Result<IdAllocator, StoreError> {
        Ok(IdAllocator {
            inode: AtomicU64::new(read_counter(view, META_NEXT_INODE_ID)?),
            block: AtomicU64::new(read_counter(view, META_NEXT_BLOCK_ID)?),
            gen_stamp: AtomicU64::new(read_counter(view, META_NEXT_GEN_STAMP)?),
            delegation_seq: AtomicU64::new(crate::namespace::delegation::next_sequence_number(view)?),
        })
    }
}

impl IdSource for IdAllocator {
    fn inode_id(&self) -> InodeId {
        self.inode.fetch_add(1, Ordering::Relaxed)
    }
    fn block_id(&self) -> u64 {
        self.block.fetch_add(1, Ordering::Relaxed)
    }
    fn gen_stamp(&self) -> u64 {
        self.gen_stamp.fetch_add(1, Ordering::Relaxed)
    }
    fn delegation_seq(&self) -> u64 {
        self.delegation_seq.fetch_add(1, Ordering::Relaxed)
    }
}

/// A directory's usage as the leader counts it, while writes charged it.
#[derive(Debug, Clone, Copy)]
struct Pending {
    ns: u64,
    ds: u64,
    ns_quota: Option<u64>,
    ds_quota: Option<u64>,
    writers: u32,
}

/// One write's net charge to one directory with a quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charge {
    pub dir: InodeId,
    pub ns: i64,
    pub ds: i64,
}

/// Quota usage of writes in flight (see the module docs).
#[derive(Debug, Default)]
pub struct QuotaLedger {
    dirs: Mutex<FxHashMap<InodeId, Pending>>,
}

fn add(v: u64, d: i64) -> u64 {
    (v as i64).saturating_add(d).max(0) as u64
}

impl PendingUsage for QuotaLedger {
    fn usage(&self, dir: InodeId) -> Option<(u64, u64)> {
        self.dirs.lock().get(&dir).map(|p| (p.ns, p.ds))
    }
}

impl QuotaLedger {
    /// Take `charges` (positive parts) if no limit is overrun, counting
    /// every write in flight; `store` is read (latest commit) for a
    /// directory no write in flight has charged. `false`: nothing taken.
    fn reserve<V: ReadView + ?Sized>(&self, store: &V, charges: &[Charge]) -> Result<bool, StoreError> {
        let mut dirs = self.dirs.lock();
        for c in charges {
            if dirs.contains_key(&c.dir) {
                continue;
            }
            // No write in flight charged it: the committed value is current.
            if let Some(q) = store.inode(c.dir)?.as_ref().and_then(|i| i.quota()) {
                dirs.insert(
                    c.dir,
                    Pending {
                        ns: q.ns_used,
                        ds: q.ds_used,
                        ns_quota: q.ns_quota,
                        ds_quota: q.ds_quota,
                        writers: 0,
                    },
                );
            }
        }
        let fits = charges.iter().all(|c| match dirs.get(&c.dir) {
            None => true, // the quota went: apply ignores the charge
            Some(p) => {
                let ns_ok = c.ns <= 0 || p.ns_quota.is_none_or(|l| add(p.ns, c.ns) <= l);
                let ds_ok = c.ds <= 0 || p.ds_quota.is_none_or(|l| add(p.ds, c.ds) <= l);
                ns_ok && ds_ok
            }
        });
        for c in charges {
            if let Some(p) = dirs.get_mut(&c.dir) {
                if fits {
                    p.ns = add(p.ns, c.ns.max(0));
                    p.ds = add(p.ds, c.ds.max(0));
                    p.writers += 1;
                } else if p.writers == 0 {
                    dirs.remove(&c.dir);
                }
            }
        }
        Ok(fits)
    }

    /// A reserved write finished: applied (its negative charges now count
    /// too) or not (its positive ones are given back).
    fn release(&self, charges: &[Charge], applied: bool) {
        let mut dirs = self.dirs.lock();
        for c in charges {
            let Some(p) = dirs.get_mut(&c.dir) else {
                continue; // the quota had gone when it was reserved
            };
            if applied {
                p.ns = add(p.ns, c.ns.min(0));
                p.ds = add(p.ds, c.ds.min(0));
            } else {
                p.ns = add(p.ns, -c.ns.max(0));
                p.ds = add(p.ds, -c.ds.max(0));
            }
            assert!(p.writers > 0, "release of directory {} that no write reserved", c.dir);
            p.writers -= 1;
            if p.writers == 0 {
                dirs.remove(&c.dir);
            }
        }
    }

    /// Directories with writes in flight (tests).
    pub fn tracked(&self) -> usize {
        self.dirs.lock().len()
    }
}

/// The net quota charges of a delta's mutations, one per directory.
pub fn charges_of(mutations: &[Mutation]) -> Vec<Charge> {
    let mut out: Vec<Charge> = Vec::new();
    for m in mutations {
        if let Mutation::AddUsage { id, ns, ds } = m {
            match out.iter_mut().find(|c| c.dir == *id) {
                Some(c) => {
                    c.ns += ns;
                    c.ds += ds;
                }
                None => out.push(Charge {
                    dir: *id,
                    ns: *ns,
                    ds: *ds,
                }),
            }
        }
    }
    out
}

/// One term's planning state on the leader (see the module docs).
#[derive(Debug)]
pub struct LeaderEpoch {
    /// The Raft term (0 for the engine, which has none).
    pub term: u64,
    pub ids: IdAllocator,
    pub quota: QuotaLedger,
    last_time_ms: AtomicI64,
}

impl LeaderEpoch {
    /// Start planning for `term` on the committed state in `view`.
    pub fn start<V: ReadView + ?Sized>(term: u64, view: &V) -> Result<Arc<LeaderEpoch>, StoreError> {
        Ok(Arc::new(LeaderEpoch {
            term,
            ids: IdAllocator::load(view)?,
            quota: QuotaLedger::default(),
            last_time_ms: AtomicI64::new(last_time(view)?),
        }))
    }

    /// The log time of a plan made now (`now_ms` from the leader's clock):
    /// never before one this epoch handed out or the last applied one.
    pub fn clock(&self, now_ms: i64) -> i64 {
        self.last_time_ms.fetch_max(now_ms, Ordering::Relaxed).max(now_ms)
    }

    /// Reserve a write's quota charges; `None` when a limit would be
    /// overrun by the writes in flight (plan again: the plan then sees them).
    pub fn reserve<V: ReadView + ?Sized>(
        self: &Arc<Self>,
        store: &V,
        charges: Vec<Charge>,
    ) -> Result<Option<Reservation>, StoreError> {
        if charges.is_empty() {
            return Ok(Some(Reservation {
                epoch: self.clone(),
                charges,
                done: true,
            }));
        }
        Ok(self.quota.reserve(store, &charges)?.then(|| Reservation {
            epoch: self.clone(),
            charges,
            done: false,
        }))
    }
}

/// A write's quota reservation; given back on drop unless [`Reservation::finish`]ed.
#[derive(Debug)]
pub struct Reservation {
    epoch: Arc<LeaderEpoch>,
    charges: Vec<Charge>,
    done: bool,
}

impl Reservation {
    /// The write was applied (`true`) or will never be (`false`).
    pub fn finish(mut self, applied: bool) {
        if !self.done {
            self.epoch.quota.release(&self.charges, applied);
            self.done = true;
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.done {
            self.epoch.quota.release(&self.charges, false);
        }
    }
}
