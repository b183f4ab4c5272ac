//! A Raft group's lifecycle, the same for a nameservice and the routers'
//! mount-table group: the openraft config from [`RaftTimings`], the first
//! start ([`initialize_if_first`]), the health monitor that stops an
//! unhealthy member campaigning and moves leadership off it
//! ([`monitor_health`]), snapshots by time as well as by log length
//! ([`snapshot_by_time`]), and where a member is ([`member_addr`]) or why
//! its node stopped ([`raft_stopped`]).
//!
//! What a group does once it leads (a nameservice formats its namespace,
//! the mount-table group nothing) stays with the group's own code.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use openraft::storage::RaftStateMachine;
use openraft::{BasicNode, Raft, ServerState};

use crate::health::{Health, HealthChecks, HEALTH_CHECK_INTERVAL_MS};
use crate::network::GroupConfig;

/// Raft timings, in milliseconds. The election timeout must exceed the
/// heartbeat interval several times over (openraft checks min > heartbeat).
///
/// Failover takes about `election_timeout_max_ms` plus one election: a
/// follower grants no vote while its leader lease (openraft sets it to
/// `election_timeout_max_ms` since the last heartbeat) runs, so a candidate
/// whose timer fires earlier tries again; a small minimum lets the retry
/// come soon after the lease ends. Pre-vote keeps a member whose timer fired
/// spuriously (a stalled heartbeat) from bumping the term and deposing a
/// healthy leader. The same bound caps the leader's read lease.
#[derive(Debug, Clone)]
pub struct RaftTimings {
    pub heartbeat_interval_ms: u64,
    pub election_timeout_min_ms: u64,
    pub election_timeout_max_ms: u64,
    /// Take a snapshot after this many log entries since the last one.
    pub snapshot_logs_since_last: u64,
    /// Log entries kept behind a snapshot (so a briefly lagging member
    /// catches up from the log rather than a snapshot).
    pub logs_kept_after_snapshot: u64,
    /// Also take a snapshot this often when entries were applied since the
    /// last one (HDFS `dfs.namenode.checkpoint.period`, an hour); 0 = never.
    pub snapshot_interval_secs: u64,
}

impl Default for RaftTimings {
    fn default() -> Self {
        RaftTimings {
            heartbeat_interval_ms: 100,
            election_timeout_min_ms: 300,
            election_timeout_max_ms: 800,
            snapshot_logs_since_last: 100_000,
            logs_kept_after_snapshot: 1000,
            snapshot_interval_secs: 3600,
        }
    }
}

/// How long a snapshot may take to arrive before its sender gives up.
pub const INSTALL_SNAPSHOT_TIMEOUT_MS: u64 = 60_000;
/// Client requests openraft's core takes from its queue at once.
pub const API_BATCH_CAPACITY: u64 = 4096;
/// Most entries in one AppendEntries.
pub const MAX_PAYLOAD_ENTRIES: u64 = 1000;

impl RaftTimings {
    /// The openraft config of a group named `cluster_name` with these timings.
    pub fn openraft_config(&self, cluster_name: &str) -> Result<openraft::Config, String> {
        openraft::Config {
            cluster_name: cluster_name.to_string(),
            heartbeat_interval: self.heartbeat_interval_ms,
            election_timeout_min: self.election_timeout_min_ms,
            election_timeout_max: self.election_timeout_max_ms,
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(self.snapshot_logs_since_last),
            max_in_snapshot_log_to_keep: self.logs_kept_after_snapshot,
            install_snapshot_timeout: INSTALL_SNAPSHOT_TIMEOUT_MS,
            api_batch_capacity: API_BATCH_CAPACITY,
            max_payload_entries: MAX_PAYLOAD_ENTRIES,
            enable_pre_vote: Some(true),
            // A restarted leader stands for election in a new term rather
            // than resuming its old one: leader-side planning and reads
            // trust state once the leader has applied an entry of its own
            // term, which must then follow everything committed before.
            enable_leader_restore: Some(false),
            ..Default::default()
        }
        .validate()
        .map_err(|e| format!("raft config: {e}"))
    }
}

/// First start of a new group: the lowest-id member of those it was
/// formatted with (`addrs`) initializes it with all of them; a member that
/// joins later (`join`) waits to be added. A no-op once initialized.
pub async fn initialize_if_first<C, SM>(
    raft: &Raft<C, SM>,
    addrs: &BTreeMap<u64, String>,
    me: u64,
    join: bool,
) -> Result<(), String>
where
    C: GroupConfig,
    SM: RaftStateMachine<C>,
{
    let initialized = raft.is_initialized().await.map_err(|e| e.to_string())?;
    if initialized || join || addrs.keys().next() != Some(&me) {
        return Ok(());
    }
    let nodes: BTreeMap<u64, BasicNode> = addrs
        .iter()
        .map(|(id, a)| (*id, BasicNode { addr: a.clone() }))
        .collect();
    match raft.initialize(nodes).await {
        Ok(()) => tracing::info!(members = ?addrs.keys().collect::<BTreeSet<_>>(), "initialized the Raft group"),
        // Another start got there first (the membership is then in the log).
        Err(e) => tracing::warn!(error = %e, "initialize the Raft group"),
    }
    Ok(())
}

/// Address of member `id`: from the latest membership `raft` knows (members
/// added since format), else from `format_addrs` (what the member was
/// formatted with).
pub fn member_addr<C, SM>(raft: &Raft<C, SM>, format_addrs: &BTreeMap<u64, String>, id: u64) -> Option<String>
where
    C: GroupConfig,
    SM: RaftStateMachine<C>,
{
    let metrics = raft.metrics();
    let m = metrics.borrow_watched();
    m.membership_config
        .membership()
        .get_node(&id)
        .map(|n| n.addr.clone())
        .or_else(|| format_addrs.get(&id).cloned())
}

/// Check health every [`HEALTH_CHECK_INTERVAL_MS`]; stop campaigning while
/// unhealthy, and as an unhealthy leader hand leadership to the most
/// caught-up voter that `peer_is_healthy(address)` says is healthy.
pub async fn monitor_health<C, SM, F, Fut>(
    raft: Raft<C, SM>,
    health: Arc<parking_lot::RwLock<Health>>,
    checks: HealthChecks,
    peer_is_healthy: F,
) where
    C: GroupConfig,
    SM: RaftStateMachine<C>,
    F: Fn(String) -> Fut,
    Fut: Future<Output = bool>,
{
    let mut tick = tokio::time::interval(Duration::from_millis(HEALTH_CHECK_INTERVAL_MS));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now = checks.check();
        let before = std::mem::replace(&mut *health.write(), now.clone());
        if before != now {
            match &now {
                Health::Healthy => tracing::info!("healthy again: campaigning for leadership again"),
                Health::Unhealthy(r) => tracing::warn!(reason = %r, "unhealthy: no longer campaigning for leadership"),
            }
        }
        raft.runtime_config().elect(now.is_healthy());
        if now.is_healthy() {
            continue;
        }
        let m = raft.metrics().borrow_watched().clone();
        if m.state != ServerState::Leader {
            continue;
        }
        // Most caught-up followers first.
        let mut candidates: Vec<(u64, u64)> = m
            .replication
            .iter()
            .flatten()
            .filter(|(id, _)| **id != m.id && m.membership_config.membership().voter_ids().any(|v| v == **id))
            .map(|(id, matched)| (matched.as_ref().map_or(0, |l| l.index), *id))
            .collect();
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        for (_, id) in candidates {
            let Some(addr) = m
                .membership_config
                .membership()
                .get_node(&id)
                .map(|n| crate::peer_route::peer_route(id, &n.addr))
            else {
                continue;
            };
            if peer_is_healthy(addr).await {
                tracing::warn!(to = id, "unhealthy leader: transferring leadership");
                if let Err(e) = raft.trigger().transfer_leader(id).await {
                    tracing::warn!(error = %e, "transfer leadership");
                }
                break;
            }
        }
    }
}

/// Stop a member's background tasks and wait until they are gone (they may
/// hold what a reopen in the same process must find closed).
pub async fn stop_tasks(tasks: Vec<tokio::task::JoinHandle<()>>) {
    for t in &tasks {
        t.abort();
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// Take a snapshot every `secs` if entries were applied since the last one
/// (the time half of HDFS's checkpoint trigger; the entry count half is
/// openraft's snapshot policy).
pub async fn snapshot_by_time<C, SM>(raft: Raft<C, SM>, secs: u64)
where
    C: GroupConfig,
    SM: RaftStateMachine<C>,
{
    let mut tick = tokio::time::interval(Duration::from_secs(secs));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await; // the first tick is immediate
    loop {
        tick.tick().await;
        let m = raft.metrics().borrow_watched().clone();
        let applied = m.last_applied.as_ref().map_or(0, |l| l.index);
        let snapshot = m.snapshot.as_ref().map_or(0, |l| l.index);
        if applied > snapshot {
            tracing::info!(applied, snapshot, "periodic snapshot");
            if let Err(e) = raft.trigger().snapshot().await {
                tracing::warn!(error = %e, "trigger snapshot");
                return;
            }
        }
    }
}

/// Wait until `raft` stops by itself, and say why: a log write or fsync
/// that failed (openraft stops rather than go on with a log it could not
/// make durable; a later fsync that succeeds would prove nothing about the
/// writes the failed one covered), or a state machine error. The member can
/// then no longer vote, lead or apply; its process exits with the reason,
/// as a NameNode whose journal failed does, and is restarted once the disk
/// is fixed.
///
/// It looks every [`RAFT_STOPPED_CHECK_INTERVAL_MS`] rather than on every
/// change of the metrics: those change on every Raft event (each
/// leadership confirmation of a read round stamps `last_quorum_acked`),
/// and the process's main thread, which waits here, would be woken for
/// each (a futex wake and two context switches: ~10% of a member's CPU
/// under getFileInfo in a profile).
pub async fn raft_stopped<C, SM>(raft: &Raft<C, SM>) -> String
where
    C: GroupConfig,
    SM: RaftStateMachine<C>,
{
    let mut tick = tokio::time::interval(Duration::from_millis(RAFT_STOPPED_CHECK_INTERVAL_MS));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let metrics = raft.metrics();
        let m = metrics.borrow_watched();
        if let Err(f) = &m.running_state {
            return f.to_string();
        }
        if m.state == ServerState::Shutdown {
            return "the Raft node stopped".into();
        }
    }
}

/// How often [`raft_stopped`] looks whether the Raft node stopped.
pub const RAFT_STOPPED_CHECK_INTERVAL_MS: u64 = 200;
