//! A DataNode started with `--router` serves the nameservices the routers
//! have registered, and follows the federation as it changes, without a
//! restart (HDFS needs `dfsadmin -refreshNamenodes` on every DataNode):
//!
//! ```text
//!   routers' federation (long poll) ──► reconcile ──► a nameservice registered:  serve its pool
//!                                          │          its members changed:      serve it anew
//!                                          │          recorded removed:         stop; delete its pool
//!                                          │                                     (empty, or forced)
//!                                          └────────► FEDERATION on every volume (what it serves)
//! ```
//!
//! Guarantees:
//! * A pool is deleted only when the federation records its nameservice
//!   removed (`RemovedNameservice`), never because a table lacks it: a new
//!   or mistaken router group cannot make a DataNode drop data. A pool that
//!   holds replicas is deleted only when the removal was forced; otherwise
//!   it is kept (and said so in the log) until `-removeNameservice -force`.
//! * A DataNode down during a removal deletes the orphaned pool when it
//!   returns: every pool on its volumes is compared with the removed
//!   nameservices, whether or not it was serving it.
//! * The nameservices served are kept in `<dir>/current/FEDERATION`, so a
//!   DataNode that restarts while every router is down serves them still.
//!
//! Caveats: a router group reformatted from scratch is not followed until
//! its version passes the one a DataNode last followed (its old
//! nameservices keep being served meanwhile). A nameservice no longer
//! registered but not recorded removed
//! (its record forgotten after [`raftfs_federation::federation::MAX_REMOVED_NAMESERVICES_KEPT`]
//! removals) stops being served and its pool is kept.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use raftfs_federation::admin::MAX_FEDERATION_WAIT_MS;
use raftfs_federation::admin_client::RouterAdminClient;
use raftfs_federation::{Federation, NameserviceRecord};
use serde::{Deserialize, Serialize};

use crate::actor;
use crate::node::Node;
use crate::storage::{write_atomic, Storage};

/// The file, in each volume's `current/`, that lists what the node serves.
pub const FEDERATION_FILE: &str = "FEDERATION";
/// Pause after a failed poll before the next (every router unreachable).
const POLL_RETRY_PAUSE_MS: u64 = 500;

/// What `FEDERATION` holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Followed {
    /// The federation version it was written at.
    version: u64,
    nameservices: Vec<NameserviceRecord>,
}

/// One nameservice served (its task stops when this is dropped).
struct Served {
    record: NameserviceRecord,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What a follower holds between two versions of the federation.
struct Follower {
    node: Arc<Node>,
    /// Block pool id → the nameservice served.
    served: BTreeMap<String, Served>,
    /// Pools kept (not empty, removal not forced), by the version that
    /// removed them: said once in the log.
    kept: BTreeSet<(String, u64)>,
}

/// The newest `FEDERATION` on the node's volumes.
fn load(storage: &Storage) -> Followed {
    storage
        .volumes
        .iter()
        .filter(|v| !v.is_failed())
        .filter_map(|v| std::fs::read(v.dir.join("current").join(FEDERATION_FILE)).ok())
        .filter_map(|raw| serde_json::from_slice::<Followed>(&raw).ok())
        .max_by_key(|f| f.version)
        .unwrap_or_default()
}

fn save(storage: &Storage, f: &Followed) {
    let json = serde_json::to_vec_pretty(f).expect("serialize FEDERATION");
    for v in storage.volumes.iter().filter(|v| !v.is_failed()) {
        if let Err(e) = write_atomic(&v.dir.join("current").join(FEDERATION_FILE), &json) {
            v.fail("write current/FEDERATION", &e);
        }
    }
}

impl Follower {
    fn serve(&mut self, r: &NameserviceRecord) {
        let members: Vec<String> = r.members.values().cloned().collect();
        let task = tokio::spawn(actor::run_nameservice(
            self.node.clone(),
            members,
            Some(r.block_pool_id.clone()),
        ));
        tracing::info!(nameservice = %r.name, bpid = %r.block_pool_id, "serving a nameservice the routers registered");
        self.served.insert(
            r.block_pool_id.clone(),
            Served {
                record: r.clone(),
                task,
            },
        );
    }

    /// Stop serving pool `bpid` (if it is), and wait until its task has
    /// stopped: an aborted task finishes the poll it is in, which may be
    /// opening (creating) the pool that is about to be deleted.
    async fn stop(&mut self, bpid: &str) {
        if let Some(mut s) = self.served.remove(bpid) {
            tracing::info!(nameservice = %s.record.name, bpid, "no longer serving the nameservice");
            s.task.abort();
            let _ = (&mut s.task).await;
            self.node.forget_pool(bpid);
        }
    }

    /// Bring what the node serves and keeps in line with `fed`.
    async fn reconcile(&mut self, fed: &Federation) {
        let registered: BTreeMap<&str, &NameserviceRecord> =
            fed.nameservices().map(|r| (r.block_pool_id.as_str(), r)).collect();
        for (bpid, r) in &registered {
            if self.served.get(*bpid).map(|s| &s.record) != Some(*r) {
                self.stop(bpid).await;
                self.serve(r);
            }
        }
        let gone: Vec<String> = self
            .served
            .keys()
            .filter(|b| !registered.contains_key(b.as_str()))
            .cloned()
            .collect();
        for bpid in &gone {
            self.stop(bpid).await;
            if !fed.removed().contains_key(bpid) {
                tracing::warn!(
                    bpid,
                    "the routers no longer list this pool's nameservice but do not record it removed: its pool is kept"
                );
            }
        }
        for pool in self.node.storage.pools() {
            let Some(removed) = fed.removed().get(&pool.id) else {
                continue;
            };
            if registered.contains_key(pool.id.as_str()) {
                continue;
            }
            self.stop(&pool.id).await;
            let (storage, bpid, force) = (self.node.storage.clone(), pool.id.clone(), removed.force);
            let r = tokio::task::spawn_blocking(move || storage.remove_pool(&bpid, force))
                .await
                .unwrap_or_else(|e| Err(raftfs_proto::FsError::Internal(e.to_string())));
            match r {
                Ok(Some(replicas)) => tracing::info!(nameservice = %removed.name, bpid = %pool.id, replicas,
                    "deleted the block pool of a removed nameservice"),
                Ok(None) => {
                    if self.kept.insert((pool.id.clone(), removed.version)) {
                        tracing::warn!(nameservice = %removed.name, bpid = %pool.id,
                            "the block pool of a removed nameservice holds replicas: kept \
                             (dfsadmin -removeNameservice NAME -force deletes it)");
                    }
                }
                Err(e) => tracing::error!(bpid = %pool.id, error = %e, "deleting a removed nameservice's block pool"),
            }
        }
        let followed = Followed {
            version: fed.version(),
            nameservices: registered.values().map(|r| (*r).clone()).collect(),
        };
        let storage = self.node.storage.clone();
        let _ = tokio::task::spawn_blocking(move || save(&storage, &followed)).await;
    }
}

/// Serve the nameservices the routers at `routers` (HOST:PORT) register,
/// following every change, until the task is aborted.
pub async fn follow(node: Arc<Node>, routers: Vec<String>) {
    let mut f = Follower {
        node: node.clone(),
        served: BTreeMap::new(),
        kept: BTreeSet::new(),
    };
    let known = {
        let storage = node.storage.clone();
        tokio::task::spawn_blocking(move || load(&storage))
            .await
            .unwrap_or_default()
    };
    for r in &known.nameservices {
        f.serve(r);
    }
    let client = match RouterAdminClient::new(routers, node.cfg.security.dialer.clone()) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot follow the routers");
            return;
        }
    };
    // The version already acted on: the one FEDERATION was written at
    // (none on a first start, when the first answer counts). A router
    // behind it (restarting, replaying its log) is waited for rather than
    // followed back.
    let mut have: Option<u64> = (known.version > 0).then_some(known.version);
    let mut said_behind = false;
    loop {
        let wait = if have.is_some() { MAX_FEDERATION_WAIT_MS } else { 0 };
        match client.federation(have.unwrap_or(0), wait).await {
            Ok(reply) if have.is_none_or(|v| reply.federation.version() > v) => {
                tracing::debug!(version = reply.federation.version(), "federation");
                f.reconcile(&reply.federation).await;
                have = Some(reply.federation.version());
            }
            Ok(reply) if have.is_some_and(|v| reply.federation.version() < v) && !said_behind => {
                said_behind = true;
                tracing::warn!(router_version = reply.federation.version(), followed = ?have,
                    "the routers' federation is older than the one this DataNode followed: waiting for them to catch up");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(error = %e, "federation poll");
                tokio::time::sleep(Duration::from_millis(POLL_RETRY_PAUSE_MS)).await;
            }
        }
    }
}
