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
//! Why handles per table version: every forwarded call needs its
//! nameservice's handle. They are made once for each version of the
//! federation a call is routed by (`Handles`: one per nameservice with
//! members, a handle kept across versions while its members stay the
//! same), and a call of that version finds its handle with one lock-free
//! load and a lookup by name: no lock, no comparison of member lists, no
//! hashing of the caller's data. A call routed by an older version than
//! the one in place takes the newer handle of its nameservice (its
//! members are the newer truth; a nameservice that no longer owns the
//! path refuses the call, which is routed again).
//!
//! Forwarding keeps the caller's client id and call id (see
//! [`FileSystem::forward`](crate::FileSystem::forward)), so a caller's
//! retry, through this router or another, is answered from the
//! nameservice's retry table.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use raftfs_federation::{Federation, NameserviceRecord};
use raftfs_proto::{pb, AdminOp, AdminResult, FsError, Op, OpResult};
use raftfs_trust::Dialer;

use super::call_slots::{CallSlot, CallSlots};
use crate::leader_conn::LeaderConnection;
use crate::options::ClientOptions;

/// Most calls in flight to one nameservice.
pub const MAX_CALLS_IN_FLIGHT_PER_NAMESERVICE: usize = 256;
/// How long a call waits for a slot of its nameservice before it is refused.
pub const MAX_SLOT_WAIT_MS: u64 = 1_000;

/// One nameservice: its handle, its slots and what was forwarded to it.
struct Nameservice {
    name: String,
    members: BTreeMap<u64, String>,
    conn: LeaderConnection,
    slots: CallSlots,
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

/// The handles of one version of the federation (see the module docs).
#[derive(Default)]
struct Handles {
    /// The version they were made for; `None` once a handle was made
    /// for a record given alone (then the next call remakes them).
    version: Option<u64>,
    by_name: BTreeMap<String, Arc<Nameservice>>,
}

/// The nameservices calls are forwarded to (see the module docs).
pub struct Nameservices {
    dialer: Dialer,
    opts: ClientOptions,
    handles: ArcSwap<Handles>,
    /// Held while handles are remade (one at a time; calls do not wait on it).
    remaking: Mutex<()>,
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
            handles: ArcSwap::default(),
            remaking: Mutex::new(()),
        }
    }

    /// The handle of nameservice `name` as `fed` records it.
    fn handle(&self, fed: &Federation, name: &str) -> Result<Arc<Nameservice>, FsError> {
        let handles = self.handles.load();
        if handles.version == Some(fed.version()) {
            if let Some(ns) = handles.by_name.get(name) {
                return Ok(ns.clone());
            }
        }
        drop(handles);
        let record = registered(fed, name)?;
        let _remaking = self.remaking.lock();
        let now = self.handles.load_full();
        match now.version {
            // Made meanwhile by another call.
            Some(v) if v == fed.version() => {}
            // A call routed by an older table: the newer handle, if any.
            Some(v) if v > fed.version() => {
                if let Some(ns) = now.by_name.get(name) {
                    return Ok(ns.clone());
                }
                return self.made(record, None);
            }
            _ => {
                let by_name = fed
                    .nameservices()
                    .filter(|r| !r.members.is_empty())
                    .map(|r| Ok((r.name.clone(), self.made(r, now.by_name.get(&r.name))?)))
                    .collect::<Result<_, FsError>>()?;
                self.handles.store(Arc::new(Handles {
                    version: Some(fed.version()),
                    by_name,
                }));
            }
        }
        match self.handles.load().by_name.get(name) {
            Some(ns) => Ok(ns.clone()),
            None => Err(no_members(name)),
        }
    }

    /// The handle of `record` given alone (not with its federation's
    /// version): the one in place if its members are the record's, else a
    /// new one put in its place.
    fn handle_of_record(&self, record: &NameserviceRecord) -> Result<Arc<Nameservice>, FsError> {
        let _remaking = self.remaking.lock();
        let now = self.handles.load_full();
        let known = now.by_name.get(&record.name);
        let ns = self.made(record, known)?;
        if !known.is_some_and(|kept| Arc::ptr_eq(kept, &ns)) {
            let mut by_name = now.by_name.clone();
            by_name.insert(record.name.clone(), ns.clone());
            self.handles.store(Arc::new(Handles { version: None, by_name }));
        }
        Ok(ns)
    }

    /// `known` if its members are `record`'s, else a new handle for
    /// `record` (keeping `known`'s counts).
    fn made(&self, record: &NameserviceRecord, known: Option<&Arc<Nameservice>>) -> Result<Arc<Nameservice>, FsError> {
        if let Some(ns) = known.filter(|ns| ns.members == record.members) {
            return Ok(ns.clone());
        }
        if record.members.is_empty() {
            return Err(no_members(&record.name));
        }
        let conn = LeaderConnection::new(
            record.members.values().cloned().collect(),
            self.dialer.clone(),
            self.opts.clone(),
        );
        Ok(Arc::new(Nameservice {
            name: record.name.clone(),
            members: record.members.clone(),
            conn,
            slots: CallSlots::new(MAX_CALLS_IN_FLIGHT_PER_NAMESERVICE),
            counts: known.map(|ns| ns.counts.clone()).unwrap_or_default(),
        }))
    }

    /// Run `op` on the leader of nameservice `name`, as `fed` records it,
    /// for the caller `ctx` names, in one of the nameservice's slots.
    pub async fn forward_in(
        &self,
        fed: &Federation,
        name: &str,
        ctx: &pb::CallContext,
        op: &Op,
    ) -> Result<OpResult, FsError> {
        let ns = self.handle(fed, name)?;
        let r = match ns.slot().await {
            Ok(_slot) => ns.conn.forward(ctx, op).await,
            Err(refused) => Err(refused),
        };
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
        let ns = self.handle_of_record(record)?;
        let _slot = ns.slot().await?;
        ns.conn.admin(ctx, op).await
    }

    /// What was forwarded to each nameservice of the table in place.
    pub fn forward_counts(&self) -> Vec<(String, Arc<ForwardCounts>)> {
        let handles = self.handles.load();
        handles
            .by_name
            .iter()
            .map(|(name, ns)| (name.clone(), ns.counts.clone()))
            .collect()
    }
}

impl Nameservice {
    /// One of this nameservice's call slots, or `Unavailable` after [`MAX_SLOT_WAIT_MS`].
    async fn slot(&self) -> Result<CallSlot<'_>, FsError> {
        match self.slots.take(Duration::from_millis(MAX_SLOT_WAIT_MS)).await {
            Some(slot) => Ok(slot),
            None => Err(FsError::Unavailable(format!(
                "nameservice {} is not keeping up: its {MAX_CALLS_IN_FLIGHT_PER_NAMESERVICE} call slots \
                 here stayed full for {MAX_SLOT_WAIT_MS} ms",
                self.name
            ))),
        }
    }
}

/// Nameservice `name`'s record in `fed`, or `Unroutable`.
pub(super) fn registered<'f>(fed: &'f Federation, name: &str) -> Result<&'f NameserviceRecord, FsError> {
    fed.nameservice(name).ok_or_else(|| {
        FsError::Unroutable(format!(
            "the mount table names nameservice {name}, which is not registered"
        ))
    })
}

fn no_members(name: &str) -> FsError {
    FsError::Unroutable(format!("nameservice {name} has no members registered"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use raftfs_federation::FederationChange;

    fn record(name: &str, id: u64, members: &[&str]) -> NameserviceRecord {
        NameserviceRecord {
            name: name.into(),
            namespace_id: id,
            block_pool_id: format!("BP-{id}"),
            members: members
                .iter()
                .enumerate()
                .map(|(i, a)| (i as u64 + 1, a.to_string()))
                .collect(),
        }
    }

    fn nameservices() -> Nameservices {
        Nameservices::new(Dialer::Plaintext, ClientOptions::default())
    }

    /// A federation of ns1 alone, one member.
    fn with_ns1() -> Federation {
        let mut fed = Federation::new();
        fed.apply(FederationChange::AddNameservice(record("ns1", 1, &["127.0.0.1:1"])))
            .unwrap();
        fed
    }

    #[test]
    fn handles_are_made_once_per_version_and_kept_while_members_stay() {
        let n = nameservices();
        let mut fed = with_ns1();
        let v1 = fed.clone();
        let first = n.handle(&v1, "ns1").unwrap();
        assert!(
            Arc::ptr_eq(&first, &n.handle(&v1, "ns1").unwrap()),
            "remade within a version"
        );
        // A new version that leaves ns1's members alone keeps its handle.
        fed.apply(FederationChange::AddNameservice(record("ns2", 2, &["127.0.0.1:2"])))
            .unwrap();
        let v2 = fed.clone();
        assert!(
            Arc::ptr_eq(&first, &n.handle(&v2, "ns1").unwrap()),
            "ns1's handle was remade"
        );
        let ns2 = n.handle(&v2, "ns2").unwrap();
        assert_eq!(ns2.members, record("ns2", 2, &["127.0.0.1:2"]).members);
        // New members: a new handle, with the counts of the old one.
        first.counts.count(&Ok::<(), FsError>(()));
        fed.apply(FederationChange::UpdateNameservice(record("ns1", 1, &["127.0.0.1:3"])))
            .unwrap();
        let v3 = fed.clone();
        let moved = n.handle(&v3, "ns1").unwrap();
        assert!(
            !Arc::ptr_eq(&first, &moved),
            "ns1's handle was kept though its members changed"
        );
        assert_eq!(moved.members, record("ns1", 1, &["127.0.0.1:3"]).members);
        assert_eq!(moved.counts.succeeded(), 1, "the counts were not kept");
        // A call routed by an older version takes the newer handle.
        assert!(Arc::ptr_eq(&moved, &n.handle(&v1, "ns1").unwrap()));
        assert!(Arc::ptr_eq(&ns2, &n.handle(&v3, "ns2").unwrap()));
        let counted: Vec<String> = n.forward_counts().into_iter().map(|(name, _)| name).collect();
        assert_eq!(counted, ["ns1", "ns2"]);
    }

    #[test]
    fn unknown_and_memberless_nameservices_are_unroutable() {
        let n = nameservices();
        let fed = with_ns1();
        let refusals = [
            ("ns9", n.handle(&fed, "ns9")),
            ("ns2", n.handle_of_record(&record("ns2", 2, &[]))),
        ];
        for (name, r) in refusals {
            match r {
                Err(FsError::Unroutable(why)) => assert!(why.contains(name), "{why}"),
                other => panic!("{name}: {:?}", other.map(|ns| ns.members.clone())),
            }
        }
    }

    #[test]
    fn a_record_given_alone_gets_a_handle_with_its_members() {
        let n = nameservices();
        let fed = with_ns1();
        let routed = n.handle(&fed, "ns1").unwrap();
        let same = n.handle_of_record(fed.nameservice("ns1").unwrap()).unwrap();
        assert!(Arc::ptr_eq(&routed, &same), "the record's handle was remade");
        let other = n.handle_of_record(&record("ns1", 1, &["127.0.0.1:4"])).unwrap();
        assert_eq!(other.members, record("ns1", 1, &["127.0.0.1:4"]).members);
        // The table's version is remade for the next routed call.
        assert_eq!(n.handle(&fed, "ns1").unwrap().members, routed.members);
    }
}
