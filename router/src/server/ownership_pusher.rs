//! Keeping each nameservice told which paths it owns (see the metaserver's
//! `namespace::ownership`): the router leader pushes every registered
//! nameservice its set whenever the mount table's version moves past what
//! that nameservice was last told, and again every
//! [`OWNERSHIP_PUSH_RETRY_MS`] until a push succeeds (a nameservice that
//! was down is told when it is back). Before a change that takes paths
//! from a nameservice commits, [`revoke_before`] tells it its smaller set
//! first, under the same lock, so no stale client can write there after the
//! table moved the paths elsewhere.
//!
//! Only the leader pushes; a router that loses leadership forgets what it
//! pushed, so the next leader pushes every set once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use openraft::ServerState;
use raftfs_proto::FsError;
use tokio::sync::Mutex;

use crate::federation::{Federation, FederationChange};
use crate::group::{FederationView, MountTableRaft};
use crate::proxy::{push_ownership as push, RouterCalls};

/// How often the leader retries pushes that failed (and checks it still leads).
pub const OWNERSHIP_PUSH_RETRY_MS: u64 = 2_000;

/// The table version each nameservice was last told, by name (the lock
/// that orders revocations, commits and pushes).
pub type Pushed = Arc<Mutex<BTreeMap<String, u64>>>;

/// Run on every router: push ownership while this router leads.
pub async fn push_ownership(raft: MountTableRaft, view: Arc<FederationView>, calls: Arc<RouterCalls>, pushed: Pushed) {
    let mut version = view.watch_version();
    loop {
        let _ = tokio::time::timeout(Duration::from_millis(OWNERSHIP_PUSH_RETRY_MS), version.changed()).await;
        let leads = raft.metrics().borrow_watched().state == ServerState::Leader;
        let mut told = pushed.lock().await;
        if !leads {
            told.clear();
            continue;
        }
        let fed = view.current();
        for ns in fed.nameservices() {
            if told.get(&ns.name) == Some(&fed.version()) {
                continue;
            }
            match push(&calls, &fed, &ns.name, fed.version(), fed.owned_by(&ns.name)).await {
                Ok(()) => {
                    told.insert(ns.name.clone(), fed.version());
                }
                Err(e) => tracing::warn!(nameservice = %ns.name, error = %e, "tell a nameservice its paths"),
            }
        }
    }
}

/// Before `change` commits, tell every nameservice it takes paths from
/// its smaller set (at the current version, which a later push replaces).
/// Holds no lock itself: the caller holds `pushed` across this and the commit.
pub async fn revoke_before(
    calls: &RouterCalls,
    before: &Federation,
    change: &FederationChange,
    told: &mut BTreeMap<String, u64>,
) -> Result<(), FsError> {
    let mut after = before.clone();
    if after.apply(change.clone()).is_err() {
        return Ok(()); // the change will be refused as it is
    }
    for ns in before.nameservices() {
        let old = before.owned_by(&ns.name);
        let new = after.owned_by(&ns.name);
        let kept: Vec<String> = old.iter().filter(|p| new.contains(p)).cloned().collect();
        if kept.len() == old.len() {
            continue;
        }
        told.remove(&ns.name);
        push(calls, before, &ns.name, before.version(), kept)
            .await
            .map_err(|e| match e {
                e if e.is_retryable() => FsError::Unavailable(format!(
                    "nameservice {} must give up paths before this change, and cannot be told now: {e}",
                    ns.name
                )),
                e => e,
            })?;
    }
    Ok(())
}
