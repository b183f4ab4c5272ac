//! [`Nameservices`]: the connections of a router (or of the SDK in direct
//! mode) to the nameservices it forwards calls to, one leader connection
//! per nameservice, each behind its own bounded set of call slots.
//!
//! Why slots per nameservice: a nameservice that is slow or dead holds its
//! callers until their deadline. With one shared pool, those callers would
//! soon hold every slot and calls to healthy nameservices would wait
//! behind them (RBF added per-nameservice handler pools for exactly this).
//! Here a call waits at most [`MAX_SLOT_WAIT_MS`] for one of its own
//! nameservice's [`MAX_CALLS_IN_FLIGHT_PER_NAMESERVICE`] slots and is then
//! refused with a retryable `Unavailable`; no other nameservice notices.
//!
//! Forwarding keeps the caller's client id and call id (see
//! [`FileSystem::forward`](crate::FileSystem::forward)), so a caller's
//! retry, through this router or another, is answered from the
//! nameservice's retry table.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use raftfs_federation::NameserviceRecord;
use raftfs_proto::{pb, AdminOp, AdminResult, FsError, Op, OpResult};
use raftfs_trust::Dialer;
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::leader_conn::LeaderConnection;
use crate::options::ClientOptions;

/// Most calls in flight to one nameservice.
pub const MAX_CALLS_IN_FLIGHT_PER_NAMESERVICE: usize = 256;
/// How long a call waits for a slot of its nameservice before it is refused.
pub const MAX_SLOT_WAIT_MS: u64 = 1_000;

/// One nameservice: its handle, its slots and what was forwarded to it.
struct Nameservice {
    members: BTreeMap<u64, String>,
    conn: LeaderConnection,
    slots: Semaphore,
    counts: Arc<ForwardCounts>,
}

/// Calls forwarded to one nameservice since this process started (kept
/// when the nameservice's handle is remade), for a router's metrics.
#[derive(Debug, Default)]
pub struct ForwardCounts {
    succeeded: AtomicU64,
    failed: AtomicU64,
}

impl ForwardCounts {
    /// Calls answered with a result.
    pub fn succeeded(&self) -> u64 {
        self.succeeded.load(Ordering::Relaxed)
    }

    /// Calls answered with an error (the nameservice's, or no slot in time).
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }

    fn count<T>(&self, r: &Result<T, FsError>) {
        let c = if r.is_ok() { &self.succeeded } else { &self.failed };
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// The nameservices calls are forwarded to (see the module docs).
pub struct Nameservices {
    dialer: Dialer,
    opts: ClientOptions,
    by_name: Mutex<HashMap<String, Arc<Nameservice>>>,
}

impl Nameservices {
    /// Forward over `dialer` (a router's certificate, which members let
    /// name the user it acts for; or the SDK's own), with `opts`'s
    /// timeouts, deadline and backoff (their TLS and token settings are
    /// not read: the dialer and each call's context say those).
    pub fn new(dialer: Dialer, opts: ClientOptions) -> Nameservices {
        Nameservices {
            dialer,
            opts,
            by_name: Mutex::new(HashMap::new()),
        }
    }

    /// The handle of `record`, made on first use and remade when the
    /// federation lists other members for it.
    fn get(&self, record: &NameserviceRecord) -> Result<Arc<Nameservice>, FsError> {
        let mut map = self.by_name.lock();
        let mut counts = Arc::default();
        if let Some(ns) = map.get(&record.name) {
            if ns.members == record.members {
                return Ok(ns.clone());
            }
            counts = ns.counts.clone();
        }
        if record.members.is_empty() {
            return Err(FsError::Unroutable(format!(
                "nameservice {} has no members registered",
                record.name
            )));
        }
        let conn = LeaderConnection::new(
            record.members.values().cloned().collect(),
            self.dialer.clone(),
            self.opts.clone(),
        );
        let ns = Arc::new(Nameservice {
            members: record.members.clone(),
            conn,
            slots: Semaphore::new(MAX_CALLS_IN_FLIGHT_PER_NAMESERVICE),
            counts,
        });
        map.insert(record.name.clone(), ns.clone());
        Ok(ns)
    }

    /// Run `op` on `record`'s leader for the caller `ctx` names, in one of
    /// the nameservice's slots.
    pub async fn forward(
        &self,
        record: &NameserviceRecord,
        ctx: &pb::CallContext,
        op: &Op,
    ) -> Result<OpResult, FsError> {
        let ns = self.get(record)?;
        let _slot = match self.slot(record, &ns).await {
            Ok(slot) => slot,
            Err(refused) => {
                let refused = Err(refused);
                ns.counts.count(&refused);
                return refused;
            }
        };
        let r = ns.conn.forward(ctx, op).await;
        ns.counts.count(&r);
        r
    }

    /// Run the `dfsadmin` command `op` on `record`'s leader for the caller
    /// `ctx` names (the member checks that caller is its superuser), in
    /// one of the nameservice's slots. Not counted as a forwarded call.
    pub async fn admin(
        &self,
        record: &NameserviceRecord,
        ctx: &pb::CallContext,
        op: &AdminOp,
    ) -> Result<AdminResult, FsError> {
        let ns = self.get(record)?;
        let _slot = self.slot(record, &ns).await?;
        ns.conn.admin(ctx, op).await
    }

    /// One of `ns`'s call slots, or `Unavailable` after [`MAX_SLOT_WAIT_MS`].
    async fn slot<'n>(&self, record: &NameserviceRecord, ns: &'n Nameservice) -> Result<SemaphorePermit<'n>, FsError> {
        // A free slot is taken without arming a timer (the common case).
        if let Ok(slot) = ns.slots.try_acquire() {
            return Ok(slot);
        }
        let wait = Duration::from_millis(MAX_SLOT_WAIT_MS);
        match tokio::time::timeout(wait, ns.slots.acquire()).await {
            Ok(Ok(slot)) => Ok(slot),
            _ => Err(FsError::Unavailable(format!(
                "nameservice {} is not keeping up: its {MAX_CALLS_IN_FLIGHT_PER_NAMESERVICE} call slots \
                 here stayed full for {MAX_SLOT_WAIT_MS} ms",
                record.name
            ))),
        }
    }

    /// What was forwarded to each nameservice this process has called.
    pub fn forward_counts(&self) -> Vec<(String, Arc<ForwardCounts>)> {
        let map = self.by_name.lock();
        map.iter().map(|(name, ns)| (name.clone(), ns.counts.clone())).collect()
    }
}
