//! [`Nameservices`]: the router's connections to the nameservices it
//! forwards calls to, one SDK handle per nameservice, each behind its own
//! bounded set of call slots.
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
//! [`raftfs_client::FileSystem::forward`]), so a caller's retry, through
//! this router or another, is answered from the nameservice's retry table.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use raftfs_client::{ClientOptions, ClientTls, DelegationTokenSource, FileSystem, FollowerReads, Identity};
use raftfs_federation::NameserviceRecord;
use raftfs_proto::{pb, FsError, Op, OpResult};
use raftfs_trust::Dialer;
use tokio::sync::Semaphore;

/// Most calls a router has in flight to one nameservice.
pub const MAX_CALLS_IN_FLIGHT_PER_NAMESERVICE: usize = 256;
/// How long a call waits for a slot of its nameservice before it is refused.
pub const MAX_SLOT_WAIT_MS: u64 = 1_000;
/// How long the router tries one forwarded call (leader changes and
/// retries included). Below the SDK's per-attempt timeout (10 s), so a
/// caller hears the nameservice's answer, or this router's `Timeout`,
/// before it gives up on the router.
pub const FORWARD_DEADLINE_MS: u64 = 8_000;
/// Timeout of one attempt of a forwarded call.
pub const FORWARD_ATTEMPT_TIMEOUT_MS: u64 = 3_000;

/// One nameservice: its handle and its slots.
struct Nameservice {
    members: BTreeMap<u64, String>,
    fs: FileSystem,
    slots: Arc<Semaphore>,
}

/// The nameservices this router forwards to (see the module docs).
pub struct Nameservices {
    dialer: Dialer,
    by_name: Mutex<HashMap<String, Arc<Nameservice>>>,
}

fn forward_options() -> ClientOptions {
    ClientOptions {
        call_deadline_ms: FORWARD_DEADLINE_MS,
        rpc_timeout_ms: FORWARD_ATTEMPT_TIMEOUT_MS,
        follower_reads: FollowerReads::Off,
        short_circuit: false,
        // The dialer is the router's own; these are never read.
        tls: ClientTls::Insecure,
        delegation_token: DelegationTokenSource::None,
        ..ClientOptions::default()
    }
}

impl Nameservices {
    /// Forward over `dialer` (the router's certificate: members let a
    /// router name the user it acts for).
    pub fn new(dialer: Dialer) -> Nameservices {
        Nameservices {
            dialer,
            by_name: Mutex::new(HashMap::new()),
        }
    }

    /// The handle of `record`, made on first use and remade when the
    /// federation lists other members for it.
    fn get(&self, record: &NameserviceRecord) -> Result<Arc<Nameservice>, FsError> {
        let mut map = self.by_name.lock();
        if let Some(ns) = map.get(&record.name) {
            if ns.members == record.members {
                return Ok(ns.clone());
            }
        }
        if record.members.is_empty() {
            return Err(FsError::Unroutable(format!(
                "nameservice {} has no members registered",
                record.name
            )));
        }
        let uri = format!(
            "raftfs://{}",
            record.members.values().cloned().collect::<Vec<_>>().join(",")
        );
        let fs = FileSystem::connect_with_dialer(
            &uri,
            Identity::new("router", &[]),
            forward_options(),
            self.dialer.clone(),
        )?;
        let ns = Arc::new(Nameservice {
            members: record.members.clone(),
            fs,
            slots: Arc::new(Semaphore::new(MAX_CALLS_IN_FLIGHT_PER_NAMESERVICE)),
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
        let wait = Duration::from_millis(MAX_SLOT_WAIT_MS);
        let _slot = match tokio::time::timeout(wait, ns.slots.clone().acquire_owned()).await {
            Ok(Ok(slot)) => slot,
            _ => {
                return Err(FsError::Unavailable(format!(
                    "nameservice {} is not keeping up: its {MAX_CALLS_IN_FLIGHT_PER_NAMESERVICE} call slots \
                     on this router stayed full for {MAX_SLOT_WAIT_MS} ms",
                    record.name
                )))
            }
        };
        ns.fs.forward(ctx, op).await
    }
}
