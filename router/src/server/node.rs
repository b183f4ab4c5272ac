//! One router: its member of the mount-table Raft group (log, state
//! machine, Raft node, health monitor, timed snapshots, all from the
//! generic glue of `raftfs_raft`) and the calls its services make on it.
//!
//! Changes go through the group's leader and are answered once committed
//! and applied; only the superuser (of the routers' VERSION) may make them.
//! Reads of the federation are served from what this router has applied,
//! and may wait for a newer version (a long poll).
//!
//! Safe mode: a router routes client calls by the table it has applied,
//! which is current only while it is in touch with its group's quorum. A
//! router that has not been for [`RouterConfig::safe_mode_after_ms`] (a
//! leader without quorum acknowledgements, a follower without a leader's
//! heartbeat, a candidate, a router just started), or that an operator
//! put there (`routeradmin -safemode enter`), is in safe mode: it refuses
//! client calls with a retryable `SafeModeException` and says why, instead
//! of answering from a table that may be stale (RBF's router safe mode).

use futures::future::BoxFuture;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use parking_lot::{Mutex, RwLock};
use raftfs_proto::FsError;
use raftfs_raft::group::{self, initialize_if_first};
use raftfs_raft::health::{Health, HealthChecks, HealthConfig};
use raftfs_raft::layout::{self, VersionFile, NODE_TYPE_ROUTER};
use raftfs_raft::leader_contact::{in_touch_with_quorum, LeaderContact};
use raftfs_raft::{GroupMetrics, RaftGroup, RaftTimings};
use raftfs_trust::{ClientAuth, DelegationTokenTimes, NodeSecurity, PeerRole};

use crate::admin::{RouterStatus, MAX_FEDERATION_WAIT_MS};
use crate::error::RouterError;
use crate::federation::{Federation, FederationChange};
use crate::group::{FederationCommand, FederationView, LogStore, MountTableRaft, MountTableStateMachine, Snapshots};
use crate::mount_table::MountTableChange;
use crate::proxy::{router_nameservices, RouterCalls};
use crate::server::ownership_pusher::{self, Pushed};
use crate::server::router_metrics::RouterMetrics;

/// How a router runs.
#[derive(Debug, Clone)]
pub struct RouterConfig {
    /// Its directory, formatted with `raftfs router format`.
    pub dir: std::path::PathBuf,
    pub router_id: u64,
    pub timings: RaftTimings,
    pub health: HealthConfig,
    /// Refuse to start unless VERSION names this cluster.
    pub expect_cluster_id: Option<String>,
    pub security: NodeSecurity,
    pub client_auth: ClientAuth,
    /// Enter safe mode after this long out of touch with the group's quorum.
    pub safe_mode_after_ms: u64,
    /// The lifetimes of the delegation tokens the routers issue.
    pub delegation: DelegationTokenTimes,
}

/// Default of [`RouterConfig::safe_mode_after_ms`]: several election
/// timeouts, so an election in progress does not trip it.
pub const DEFAULT_SAFE_MODE_AFTER_MS: u64 = 3_000;

pub struct RouterNode {
    pub raft: MountTableRaft,
    pub version: VersionFile,
    pub security: NodeSecurity,
    pub client_auth: ClientAuth,
    view: Arc<FederationView>,
    snapshots: Arc<Snapshots>,
    health: Arc<RwLock<Health>>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// When this router last heard from its group's leader.
    pub leader_contact: Arc<LeaderContact>,
    safe_mode_after: Duration,
    /// Put in safe mode by an operator (`routeradmin -safemode enter`).
    manual_safe_mode: AtomicBool,
    /// Client calls of the federated namespace.
    pub calls: Arc<RouterCalls>,
    /// What each nameservice was last told it owns (and the lock that
    /// orders revocations before commits).
    pushed: Pushed,
    /// Prometheus metrics (`/metrics` on the router's HTTP port).
    pub metrics: Arc<RouterMetrics>,
    /// The lifetimes of the delegation tokens the routers issue
    /// ([`super::token_issuer`]).
    pub delegation: DelegationTokenTimes,
    /// Held while a master key is made, so two are not proposed at once.
    pub(super) token_key_lock: tokio::sync::Mutex<()>,
}

fn fs(e: FsError) -> RouterError {
    RouterError::Fs(e)
}

impl RouterNode {
    /// Open the router's directory and start its Raft node (no RPC server).
    /// Boxed, so that a crate awaiting it (the `raftfs` binary) calls this crate's code
    /// instead of compiling its own copy of the whole call tree (docs/architecture.md, "Build time").
    #[inline(never)]
    pub fn open(cfg: &RouterConfig) -> BoxFuture<'_, Result<RouterNode, RouterError>> {
        Box::pin(Self::open_unboxed(cfg))
    }

    async fn open_unboxed(cfg: &RouterConfig) -> Result<RouterNode, RouterError> {
        let version = layout::check(
            &cfg.dir,
            NODE_TYPE_ROUTER,
            cfg.router_id,
            cfg.expect_cluster_id.as_deref(),
        )
        .map_err(|e| fs(FsError::InvalidArgument(e.to_string())))?;
        let log = LogStore::open(&layout::raft_log_dir(&cfg.dir))
            .map_err(|e| fs(FsError::Storage(format!("open raft log: {e}"))))?;
        let checks = HealthChecks::new(&cfg.dir, cfg.health.clone(), log.io_stats());
        let sm = MountTableStateMachine::open(&cfg.dir)
            .map_err(|e| fs(FsError::Storage(format!("open the mount table: {e}"))))?;
        let (view, snapshots) = (sm.view(), sm.snapshots());
        let config = cfg
            .timings
            .openraft_config(&version.nameservice)
            .map_err(|e| fs(FsError::InvalidArgument(e)))?;
        let network =
            raftfs_raft::NetworkFactory::new(raft_group(&version), cfg.security.dialer.clone(), PeerRole::Router);
        let raft = MountTableRaft::new(cfg.router_id, Arc::new(config), network, log, sm)
            .await
            .map_err(|e| fs(FsError::Internal(format!("start raft: {e}"))))?;
        let start_term = GroupMetrics::term_of(&raft);
        initialize_if_first(&raft, &version.members, version.member_id, version.join)
            .await
            .map_err(|e| fs(FsError::Internal(e)))?;
        let health = Arc::new(RwLock::new(Health::Healthy));
        let dialer = cfg.security.dialer.clone();
        let mut tasks = vec![tokio::spawn(group::monitor_health(
            raft.clone(),
            health.clone(),
            checks,
            move |addr| {
                let dialer = dialer.clone();
                async move { crate::server::peer_is_healthy(&addr, &dialer).await }
            },
        ))];
        if cfg.timings.snapshot_interval_secs > 0 {
            tasks.push(tokio::spawn(group::snapshot_by_time(
                raft.clone(),
                cfg.timings.snapshot_interval_secs,
            )));
        }
        let calls = Arc::new(RouterCalls::new(
            view.clone(),
            router_nameservices(cfg.security.dialer.clone()),
            &version.superuser,
        ));
        let pushed: Pushed = Default::default();
        let metrics = Arc::new(RouterMetrics::new());
        tasks.push({
            let (metrics, raft) = (metrics.clone(), raft.clone());
            tokio::spawn(async move { metrics.raft.count_changes(raft, start_term).await })
        });
        tasks.push(tokio::spawn(ownership_pusher::push_ownership(
            raft.clone(),
            view.clone(),
            calls.clone(),
            pushed.clone(),
        )));
        Ok(RouterNode {
            raft,
            version,
            security: cfg.security.clone(),
            client_auth: cfg.client_auth,
            view,
            snapshots,
            health,
            tasks: Mutex::new(tasks),
            leader_contact: Arc::new(LeaderContact::default()),
            safe_mode_after: Duration::from_millis(cfg.safe_mode_after_ms),
            manual_safe_mode: AtomicBool::new(false),
            calls,
            pushed,
            metrics,
            delegation: cfg.delegation,
            token_key_lock: tokio::sync::Mutex::new(()),
        })
    }

    /// The mount-table group of this router's cluster.
    pub fn raft_group(&self) -> RaftGroup {
        raft_group(&self.version)
    }

    /// The router's snapshot directory (the Raft service writes received snapshots there).
    pub fn snapshots(&self) -> Arc<Snapshots> {
        self.snapshots.clone()
    }

    /// The federation as this router has applied it.
    pub fn view(&self) -> &Arc<FederationView> {
        &self.view
    }

    /// Make `change` for `user`: the superuser only, through the leader.
    pub async fn change(&self, user: &str, change: FederationChange) -> Result<u64, RouterError> {
        self.check_superuser(user, "change the mount table")?;
        if matches!(change, FederationChange::DelegationTokens(_)) {
            return Err(RouterError::MountTable(crate::MountTableError::Invalid(
                "delegation tokens are issued, renewed and cancelled through the client protocol, \
                 not the mount table's admin"
                    .into(),
            )));
        }
        // Only the leader acts on nameservices for a change (a follower's
        // revocation would outlive a change it never commits).
        let m = self.raft.metrics().borrow_watched().clone();
        if m.state != openraft::ServerState::Leader {
            let leader = m.current_leader.and_then(|id| {
                self.addr_of(id)
                    .map(|addr| raftfs_proto::LeaderHint { member_id: id, addr })
            });
            return Err(fs(FsError::NotLeader { leader }));
        }
        if let FederationChange::AddNameservice(r) = &change {
            super::nameservice_check::check_record(&self.security.dialer, &self.version.cluster_id, r)
                .await
                .map_err(fs)?;
        }
        // A quota is made enforceable in the nameservice before the table
        // says it holds (a refused change leaves a quota the table lacks,
        // which the next -setQuota or -clrQuota replaces).
        if let FederationChange::Mount(MountTableChange::SetQuota { source, quota }) = &change {
            crate::proxy::enforce_mount_quota(&self.calls, source, *quota)
                .await
                .map_err(fs)?;
        }
        // Paths leave a nameservice before the table sends them elsewhere;
        // the lock keeps the pusher from handing them back meanwhile.
        let mut told = self.pushed.lock().await;
        ownership_pusher::revoke_before(&self.calls, &self.view.current(), &change, &mut told)
            .await
            .map_err(fs)?;
        let cmd = FederationCommand {
            change,
            by: user.to_string(),
        };
        let r = self
            .raft
            .client_write(cmd)
            .await
            .map_err(|e| fs(raftfs_raft::client_errors::write_error(e)))?;
        match r.data.result {
            Some(Ok(version)) => Ok(version),
            Some(Err(e)) => Err(RouterError::MountTable(e)),
            None => Err(fs(FsError::Internal("a change entry without an answer".into()))),
        }
    }

    /// The federation once its version is past `since` (or after `wait_ms`,
    /// at most [`MAX_FEDERATION_WAIT_MS`], with the current one).
    pub async fn federation_after(&self, since: u64, wait_ms: u64) -> Federation {
        let mut version = self.view.watch_version();
        let wait = Duration::from_millis(wait_ms.min(MAX_FEDERATION_WAIT_MS));
        let _ = tokio::time::timeout(wait, version.wait_for(|v| *v > since)).await;
        self.view.federation()
    }

    /// Why this router is in safe mode, or `None` when it is not (see the module docs).
    pub fn safe_mode(&self) -> Option<String> {
        if self.manual_safe_mode.load(Ordering::Relaxed) {
            return Some(format!(
                "router {} was put in safe mode by an operator (routeradmin -safemode leave)",
                self.version.member_id
            ));
        }
        if in_touch_with_quorum(&self.raft, &self.leader_contact, self.safe_mode_after) {
            return None;
        }
        Some(format!(
            "router {} has not been in touch with the mount table's quorum for {} ms, so its table may be stale",
            self.version.member_id,
            self.safe_mode_after.as_millis()
        ))
    }

    /// Enter (`true`) or leave the operator's safe mode (superuser only).
    pub fn set_safe_mode(&self, user: &str, enter: bool) -> Result<(), RouterError> {
        self.check_superuser(user, "change safe mode")?;
        self.manual_safe_mode.store(enter, Ordering::Relaxed);
        tracing::warn!(by = user, enter, "router safe mode set by an operator");
        Ok(())
    }

    fn check_superuser(&self, user: &str, what: &str) -> Result<(), RouterError> {
        if user != self.version.superuser {
            return Err(fs(FsError::AccessControl(format!(
                "{user} may not {what}: only the superuser {} may",
                self.version.superuser
            ))));
        }
        Ok(())
    }

    /// Role, term, applied index, version and health.
    pub fn status(&self) -> RouterStatus {
        let m = self.raft.metrics().borrow_watched().clone();
        RouterStatus {
            router_id: self.version.member_id,
            state: format!("{:?}", m.state),
            term: m.current_term,
            leader: m.current_leader,
            applied_index: self.view.applied_index(),
            version: self.view.with(Federation::version),
            health: self.health.read().describe(),
            safe_mode: self.safe_mode(),
        }
    }

    /// Address of router `id` (from the group's membership, else VERSION).
    pub fn addr_of(&self, id: u64) -> Option<String> {
        group::member_addr(&self.raft, &self.version.members, id)
    }

    /// Wait until the Raft node stops by itself, and say why.
    /// Boxed, as [`RouterNode::open`] is.
    #[inline(never)]
    pub fn raft_stopped(&self) -> BoxFuture<'_, String> {
        Box::pin(group::raft_stopped(&self.raft))
    }

    /// Keep `task` with the router's background tasks (stopped at shutdown).
    pub(super) fn add_task(&self, task: tokio::task::JoinHandle<()>) {
        self.tasks.lock().push(task);
    }

    /// Stop the background tasks and Raft (boxed, as [`RouterNode::open`] is).
    #[inline(never)]
    pub fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let tasks: Vec<_> = self.tasks.lock().drain(..).collect();
            group::stop_tasks(tasks).await;
            if let Err(e) = self.raft.shutdown().await {
                tracing::warn!(error = %e, "shut down raft");
            }
        })
    }
}

fn raft_group(version: &VersionFile) -> RaftGroup {
    RaftGroup {
        cluster_id: version.cluster_id.clone(),
        namespace_id: raftfs_raft::MOUNT_TABLE_GROUP_ID,
    }
}
