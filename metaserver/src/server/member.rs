//! One nameservice member: store, Raft, and the calls the gRPC service (and
//! the in-process benchmark) make on it.
//!
//! Writes go through the [`WritePipeline`] in the member's execution mode
//! (`--exec leader`: planned here under fine-grained locks, the log
//! carries deltas; `--exec apply`: the log carries the ops), which packs
//! concurrent writes into one entry; openraft merges concurrent entries
//! into one append and one fsync (group commit); the caller is answered
//! after the entry is committed by a majority and applied. Reads: openraft's lease read
//! confirms leadership (the lease is bounded by the election timeout), waits
//! until the state machine has applied up to the read index, then reads
//! the store.
//!
//! A new leader whose namespace is not yet formatted proposes
//! [`Command::Format`] with the identity from VERSION; every member applies
//! the same entry, so all roots are byte-identical.

use futures::future::{BoxFuture, Either};
use futures::FutureExt;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use openraft::errors::{LinearizableReadError, RaftError};
use openraft::LinearizerOption;
use openraft::ServerState;
use raftfs_raft::group::{self, initialize_if_first};
use raftfs_raft::GroupMetrics;

use raftfs_proto::{CallCtx, FsError, LeaderHint, Op, OpResult};
use raftfs_trust::{ClientAuth, Dialer, NodeSecurity, PeerRole};

use super::audit::AuditLog;
use super::block_access::{self, BlockAccess};
use super::coalesce::Coalesced;
use super::data::DataPath;
use super::failpoint::Failpoints;
use super::groups::GroupMapping;
use super::health::{Health, HealthChecks, HealthConfig};
use super::layout::{self, VersionFile};
use super::member_metrics::MemberMetrics;
use super::proposer::{follow_leadership, RaftProposer};
use super::read_index::{LeaderReadIndex, RemoteReadIndex};
use crate::blocks::{BlockManager, BlockManagerConfig};
use crate::exec::pipeline::WritePipeline;
use crate::exec::ExecMode;
use crate::namespace::{self, check_ctx, FormatInfo, DEFAULT_SUPERGROUP};
use crate::raft::network::RaftGroup;
use crate::raft::state_machine::SmShared;
use crate::raft::{Command, LogStore, NetworkFactory, NsStateMachine, Raft, Snapshots, TypeConfig};
use crate::store::{MemStore, RocksStore, RocksStoreOptions, Store};

/// Which store holds the namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Memory,
    Rocksdb,
}

impl std::str::FromStr for StoreKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "memory" => Ok(StoreKind::Memory),
            "rocksdb" => Ok(StoreKind::Rocksdb),
            other => Err(format!("unknown store {other:?}: expected memory or rocksdb")),
        }
    }
}

pub use raftfs_raft::RaftTimings;

#[derive(Debug, Clone)]
pub struct MemberConfig {
    pub dir: PathBuf,
    pub member_id: u64,
    pub store: StoreKind,
    pub timings: RaftTimings,
    /// Refuse to start unless VERSION names this cluster.
    pub expect_cluster_id: Option<String>,
    /// Most client writes packed into one log entry (1 = one entry per write).
    pub max_ops_per_entry: usize,
    /// How writes are executed (`--exec`): planned on the leader under
    /// fine-grained locks (the default) or by every replica in log order.
    pub exec: ExecMode,
    pub health: HealthConfig,
    /// The block manager's tunables (dead DataNodes, safe mode, re-replication).
    pub blocks: BlockManagerConfig,
    /// The leader recovers the files of a writer silent this long (HDFS
    /// `dfs.namenode.lease-hard-limit-sec`, 20 min).
    pub lease_hard_limit_ms: u64,
    /// The group mapping file (`--group-mapping`); `None`: the host's own
    /// groups for every user (see [`GroupMapping`]).
    pub group_mapping: Option<PathBuf>,
    /// How the member serves and dials: mutual TLS with its certificate, or
    /// plaintext (`--insecure`).
    pub security: NodeSecurity,
    /// Which user a client call acts for: the name it carries (`simple`)
    /// or its user certificate's (`strong`; needs TLS).
    pub client_auth: ClientAuth,
    /// Delegation token periods (`--delegation-*`; HDFS's defaults).
    pub delegation: raftfs_trust::DelegationTokenTimes,
    /// Whether client operations are written to the audit log (`--audit-log`).
    pub audit: bool,
}

/// How long a write waits for the namespace to be formatted after a leader is elected.
const FORMAT_WAIT_MS: u64 = 10_000;

pub struct Member {
    pub raft: Raft,
    /// How this member serves (TLS and the role checks) and dials its peers.
    pub security: NodeSecurity,
    /// Which user a client call acts for (`--auth simple|strong`).
    pub client_auth: ClientAuth,
    pub version: VersionFile,
    shared: Arc<SmShared>,
    addrs: BTreeMap<u64, String>,
    failpoints: Failpoints,
    health: Arc<parking_lot::RwLock<Health>>,
    /// Background tasks (health and block monitors, leadership, reclaimer,
    /// timed snapshots), stopped at shutdown.
    tasks: parking_lot::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    reads_served: AtomicU64,
    /// Read indexes from the leader, for linearizable follower reads.
    /// The leader's read index for linearizable follower reads.
    read_index_client: Arc<Coalesced<RemoteReadIndex>>,
    /// This member's read index for its own linearizable reads as leader.
    leader_read_index: Arc<Coalesced<LeaderReadIndex>>,
    /// Soft state of the block pool (DataNodes, replicas), shared with the state machine.
    pub blocks: Arc<BlockManager>,
    /// Callers' groups, as this member resolves them (never the client's claim).
    pub groups: Arc<GroupMapping>,
    /// The data path's part of calls, and the block and lease monitors.
    pub(crate) data: DataPath,
    /// Block access tokens on answers that name blocks, and the keys for DataNodes.
    pub block_access: BlockAccess,
    /// The audit log of the client operations this member executes.
    pub audit: AuditLog,
    /// Prometheus metrics (`/metrics` on the member's HTTP port).
    pub metrics: Arc<MemberMetrics>,
}

/// How long a follower read waits for this member to catch up (or for the
/// leader's read index) before the client is sent elsewhere.
pub const FOLLOWER_READ_WAIT_MS: u64 = 2_000;

/// Where a read may be served; see `ReadMode` in raftfs.proto.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    Leader,
    Follower,
    FollowerLinearizable,
}

impl ReadMode {
    pub fn from_wire(m: i32) -> Result<ReadMode, FsError> {
        match raftfs_proto::pb::ReadMode::try_from(m) {
            Ok(raftfs_proto::pb::ReadMode::Leader) => Ok(ReadMode::Leader),
            Ok(raftfs_proto::pb::ReadMode::Follower) => Ok(ReadMode::Follower),
            Ok(raftfs_proto::pb::ReadMode::FollowerLinearizable) => Ok(ReadMode::FollowerLinearizable),
            Err(_) => Err(FsError::InvalidArgument(format!("unknown read mode {m}"))),
        }
    }
}

/// This host's wall clock in Unix milliseconds (see `raftfs_trust::clock`).
pub fn now_ms() -> i64 {
    raftfs_trust::clock::wall_clock_ms()
}

pub(crate) fn read_error(e: RaftError<TypeConfig, LinearizableReadError<TypeConfig>>) -> FsError {
    match e {
        RaftError::APIError(LinearizableReadError::ForwardToLeader(f)) => super::proposer::hint(&f),
        RaftError::APIError(LinearizableReadError::QuorumNotEnough(q)) => FsError::Unavailable(q.to_string()),
        RaftError::Fatal(f) => FsError::Unavailable(format!("member stopped: {f}")),
    }
}

/// The Raft group of the member formatted as `version`.
fn raft_group(version: &VersionFile) -> RaftGroup {
    RaftGroup {
        cluster_id: version.cluster_id.clone(),
        namespace_id: version.namespace_id,
    }
}

impl Member {
    /// The Raft group this member belongs to (its peers' requests must name it).
    pub fn raft_group(&self) -> RaftGroup {
        raft_group(&self.version)
    }

    /// The member's snapshot directory (the Raft service writes received snapshots there).
    pub fn snapshots(&self) -> Arc<Snapshots> {
        self.shared.snapshots.clone()
    }

    /// Open the member's storage and start its Raft node (no RPC server).
    /// Boxed, so that a crate awaiting it (the `raftfs` binary) calls this crate's code
    /// instead of compiling its own copy of the whole call tree (docs/architecture.md, "Build time").
    #[inline(never)]
    pub fn open(cfg: &MemberConfig) -> BoxFuture<'_, Result<Member, FsError>> {
        Box::pin(Self::open_unboxed(cfg))
    }

    async fn open_unboxed(cfg: &MemberConfig) -> Result<Member, FsError> {
        let version = layout::check(
            &cfg.dir,
            layout::NODE_TYPE_METASERVER,
            cfg.member_id,
            cfg.expect_cluster_id.as_deref(),
        )
        .map_err(|e| FsError::InvalidArgument(e.to_string()))?;
        let groups = Arc::new(GroupMapping::open(cfg.group_mapping.as_deref())?);
        let opening = std::time::Instant::now();
        let store: Arc<dyn Store> = match cfg.store {
            StoreKind::Memory => Arc::new(MemStore::new()),
            StoreKind::Rocksdb => Arc::new(RocksStore::open(
                &layout::namespace_dir(&cfg.dir),
                &RocksStoreOptions::default(),
            )?),
        };
        let store_ms = opening.elapsed().as_millis() as u64;
        let log = LogStore::open(&layout::raft_log_dir(&cfg.dir))
            .map_err(|e| FsError::Storage(format!("open raft log: {e}")))?;
        let log_ms = opening.elapsed().as_millis() as u64 - store_ms;
        let checks = HealthChecks::new(&cfg.dir, cfg.health.clone(), log.io_stats());
        let blocks = Arc::new(BlockManager::new(cfg.blocks.clone()));
        let sm = NsStateMachine::open(store, blocks.clone(), &cfg.dir)
            .map_err(|e| FsError::Storage(format!("open state machine: {e}")))?;
        let sm_ms = opening.elapsed().as_millis() as u64 - store_ms - log_ms;
        let shared = sm.shared();
        let t = &cfg.timings;
        let config = t
            .openraft_config(&version.nameservice)
            .map_err(FsError::InvalidArgument)?;
        let network = NetworkFactory::new(raft_group(&version), cfg.security.dialer.clone(), PeerRole::Member);
        let raft = Raft::new(cfg.member_id, Arc::new(config), network, log, sm)
            .await
            .map_err(|e| FsError::Internal(format!("start raft: {e}")))?;
        let start_term = GroupMetrics::term_of(&raft);
        tracing::info!(
            store_ms,
            log_ms,
            state_machine_ms = sm_ms,
            total_ms = opening.elapsed().as_millis() as u64,
            "opened the namespace, the Raft log and the state machine"
        );
        let config_source = {
            let shared = shared.clone();
            Arc::new(move || shared.config())
        };
        let writes = Arc::new(WritePipeline::start(
            cfg.exec,
            shared.store.clone(),
            config_source,
            Arc::new(RaftProposer {
                raft: raft.clone(),
                version_addrs: version.members.clone(),
            }),
            shared.log_clock.clone(),
            cfg.max_ops_per_entry,
        ));
        let read_index_client = Coalesced::new(RemoteReadIndex::new(
            raft.clone(),
            version.members.clone(),
            Duration::from_millis(FOLLOWER_READ_WAIT_MS),
            cfg.security.dialer.clone(),
        ));
        let leader_read_index = Coalesced::new(LeaderReadIndex { raft: raft.clone() });
        let data = DataPath {
            raft: raft.clone(),
            writes: writes.clone(),
            blocks: blocks.clone(),
            shared: shared.clone(),
            system_client: format!("raftfs-member-{}-{}", cfg.member_id, uuid::Uuid::new_v4()).into(),
            system_calls: Arc::new(AtomicU64::new(1)),
            superuser: version.superuser.clone().into(),
            lease_hard_limit_ms: cfg.lease_hard_limit_ms,
            delegation: cfg.delegation,
            delegation_key_lock: Arc::new(tokio::sync::Mutex::new(())),
        };
        let version_pool = version.block_pool_id.clone();
        let member = Member {
            raft,
            shared,
            addrs: version.members.clone(),
            version,
            failpoints: Failpoints::from_env(),
            health: Arc::new(parking_lot::RwLock::new(Health::Healthy)),
            tasks: parking_lot::Mutex::new(Vec::new()),
            reads_served: AtomicU64::new(0),
            read_index_client,
            leader_read_index,
            blocks,
            groups,
            data,
            block_access: BlockAccess::new(
                cfg.security.server.is_tls(),
                &version_pool,
                cfg.blocks.block_tokens,
                cfg.blocks.data_protection,
            ),
            security: cfg.security.clone(),
            client_auth: cfg.client_auth,
            audit: AuditLog::new(cfg.audit),
            metrics: Arc::new(MemberMetrics::new()),
        };
        member.bootstrap().await?;
        let dialer = cfg.security.dialer.clone();
        let monitor = tokio::spawn(group::monitor_health(
            member.raft.clone(),
            member.health.clone(),
            checks,
            move |addr| {
                let dialer = dialer.clone();
                async move { peer_health(&addr, &dialer).await.as_deref() == Some("HEALTHY") }
            },
        ));
        let blocks_monitor = tokio::spawn(member.data.clone().run_monitors());
        let leadership = tokio::spawn(follow_leadership(member.raft.clone(), writes.clone()));
        let reclaimer = tokio::spawn(writes.run_reclaimer());
        let elections = {
            let (metrics, raft) = (member.metrics.clone(), member.raft.clone());
            tokio::spawn(async move { metrics.raft.count_changes(raft, start_term).await })
        };
        let mut tasks = vec![monitor, blocks_monitor, leadership, reclaimer, elections];
        if t.snapshot_interval_secs > 0 {
            tasks.push(tokio::spawn(group::snapshot_by_time(
                member.raft.clone(),
                t.snapshot_interval_secs,
            )));
        }
        *member.tasks.lock() = tasks;
        Ok(member)
    }

    /// First start of the lowest-id member: initialize the group.
    async fn bootstrap(&self) -> Result<(), FsError> {
        initialize_if_first(&self.raft, &self.addrs, self.version.member_id, self.version.join)
            .await
            .map_err(FsError::Internal)?;
        // Whoever leads first formats the namespace (a no-op once formatted).
        let raft = self.raft.clone();
        let shared = self.shared.clone();
        let info = FormatInfo {
            cluster_id: self.version.cluster_id.clone(),
            namespace_id: self.version.namespace_id,
            block_pool_id: self.version.block_pool_id.clone(),
            nameservice: self.version.nameservice.clone(),
            superuser: self.version.superuser.clone(),
            supergroup: DEFAULT_SUPERGROUP.to_string(),
            time_ms: 0,
        };
        tokio::spawn(async move {
            let mut metrics = raft.metrics();
            loop {
                if shared.format_info().is_some() {
                    return;
                }
                let is_leader = metrics.borrow_watched().state == ServerState::Leader;
                if is_leader {
                    let mut info = info.clone();
                    info.time_ms = now_ms();
                    match raft.client_write(Command::Format(info)).await {
                        Ok(_) => return,
                        Err(e) => tracing::debug!(error = %e, "propose format"),
                    }
                }
                if metrics.changed().await.is_err() {
                    return;
                }
            }
        });
        Ok(())
    }

    pub fn shared(&self) -> &Arc<SmShared> {
        &self.shared
    }

    /// Address of member `id`: from the latest membership (which knows
    /// members added since format), else from VERSION.
    pub fn addr_of(&self, id: u64) -> Option<String> {
        group::member_addr(&self.raft, &self.addrs, id)
    }

    /// Execute one call as [`Member::call`] does, serving a read where `mode`
    /// allows it (DESIGN: observer reads). `min_index` is the highest log
    /// index the client has seen. Returns the result and this member's
    /// applied index when it answered.
    pub fn call_with(
        &self,
        ctx: CallCtx,
        op: Op,
        mode: ReadMode,
        min_index: u64,
    ) -> impl Future<Output = (Result<OpResult, FsError>, u64)> + Send + '_ {
        self.call_from(ctx, op, mode, min_index, "")
    }

    /// [`Member::call_with`] for a client on `client_host` (DataNodes on
    /// its host come first in pipelines and replica lists).
    ///
    /// The call paths are plain functions returning their futures (an
    /// async block that borrows what it captures), not async fns: an async
    /// fn keeps its arguments twice (as captured and as moved into its
    /// body), and each level's future is moved into its caller's on every
    /// call (`call_future_sizes.rs` bounds them).
    pub fn call_from<'a>(
        &'a self,
        ctx: CallCtx,
        op: Op,
        mode: ReadMode,
        min_index: u64,
        client_host: &'a str,
    ) -> impl Future<Output = (Result<OpResult, FsError>, u64)> + Send + 'a {
        let is_leader = self.raft.metrics().borrow_watched().state == ServerState::Leader;
        let call = if op.is_write() || mode == ReadMode::Leader || is_leader {
            Either::Left(self.call_at(ctx, op, client_host))
        } else {
            // Boxed: a follower's read waits for a read index and its
            // future is large; unboxed, every leader call would carry it.
            let (user, grant) = (ctx.user.clone(), block_access::grant_for(&op));
            Either::Right(Box::pin(async move {
                let mut r = self.follower_read(ctx, op, mode, min_index, client_host).await?;
                self.block_access.stamp(&user, grant, &mut r)?;
                Ok(r)
            }))
        };
        call.map(move |r| (r, *self.shared.applied_index().borrow()))
    }

    async fn follower_read(
        &self,
        ctx: CallCtx,
        op: Op,
        mode: ReadMode,
        min_index: u64,
        client_host: &str,
    ) -> Result<OpResult, FsError> {
        check_ctx(&ctx)?;
        // Read for the debug line only (this is every follower read's path).
        let applied_before = tracing::enabled!(target: "raftfs::reads", tracing::Level::DEBUG)
            .then(|| *self.shared.applied_index().borrow());
        let read_index = match mode {
            ReadMode::FollowerLinearizable => Some(self.read_index_client.get().await?),
            _ => None,
        };
        let upto = min_index.max(read_index.unwrap_or(0));
        self.wait_applied(upto).await?;
        let cfg = self
            .shared
            .config()
            .ok_or_else(|| FsError::Unavailable("namespace not formatted yet".into()))?;
        self.reads_served.fetch_add(1, Ordering::Relaxed);
        let view = self.shared.store.view();
        tracing::debug!(
            target: "raftfs::reads",
            call = ?op,
            min_index,
            ?read_index,
            ?applied_before,
            applied_at_read = *self.shared.applied_index().borrow(),
            "follower read"
        );
        let r = namespace::read(&cfg, &*view, &ctx, &op)?;
        self.data.after_read(&ctx, &op, r, client_host)
    }

    /// Wait until this member has applied `index`, for at most
    /// [`FOLLOWER_READ_WAIT_MS`] (then a retryable error: the client goes
    /// elsewhere).
    async fn wait_applied(&self, index: u64) -> Result<(), FsError> {
        let mut applied = self.shared.applied_index();
        let deadline = tokio::time::Instant::now() + Duration::from_millis(FOLLOWER_READ_WAIT_MS);
        while *applied.borrow_and_update() < index {
            match tokio::time::timeout_at(deadline, applied.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err(FsError::Unavailable("member is shutting down".into())),
                Err(_) => {
                    return Err(FsError::Unavailable(format!(
                        "member {} has not applied log index {index} within {FOLLOWER_READ_WAIT_MS} ms",
                        self.version.member_id
                    )))
                }
            }
        }
        Ok(())
    }

    /// The identifier of `token` if it is a live delegation token of this
    /// nameservice (as this member has applied the log), else why not.
    pub fn verify_delegation_token(
        &self,
        token: &raftfs_proto::DelegationToken,
    ) -> Result<raftfs_proto::DelegationTokenIdentifier, FsError> {
        let view = self.shared.store.view();
        let r = namespace::delegation::verify(&*view, token, self.shared.log_clock.estimate());
        self.unless_not_applied(r, token.identifier.sequence_number)
    }

    /// The password of live delegation token `id` of this nameservice (a
    /// Hadoop client proves it holds it, SASL DIGEST-MD5), else why not.
    pub fn delegation_token_password(&self, id: &raftfs_proto::DelegationTokenIdentifier) -> Result<Vec<u8>, FsError> {
        let view = self.shared.store.view();
        let r = namespace::delegation::password(&*view, id, self.shared.log_clock.estimate());
        self.unless_not_applied(r, id.sequence_number)
    }

    /// `r`, a refusal of token `seq`, unless this follower has not applied
    /// the token: a follower may not have applied the entry that issued it
    /// yet (its client fetched it from the leader a moment ago), so a token
    /// it does not know answers `Unavailable`, which the client retries;
    /// the leader's answer is final.
    fn unless_not_applied<T>(&self, r: Result<T, FsError>, seq: u64) -> Result<T, FsError> {
        if r.is_err() && !self.data.is_leader() {
            let view = self.shared.store.view();
            if namespace::delegation::token_record(&*view, seq)?.is_none() {
                return Err(FsError::Unavailable(format!(
                    "member {} has not applied delegation token {seq} (if it exists): ask the leader",
                    self.version.member_id
                )));
            }
        }
        r
    }

    /// As the leader: the log index a linearizable read must see applied
    /// (on whichever member it reads).
    pub async fn read_index(&self) -> Result<u64, FsError> {
        self.leader_read_index.get().await
    }

    /// As the leader: wait until this member has applied a read index
    /// confirmed after this call began, so its state (and applied index)
    /// covers everything a linearizable read must see; the index.
    pub async fn linearize(&self) -> Result<u64, FsError> {
        let read_index = self.leader_read_index.get().await?;
        self.wait_applied(read_index).await?;
        Ok(read_index)
    }

    /// How this member executes writes when it leads (`--exec`).
    pub fn exec_mode(&self) -> ExecMode {
        self.data.writes.mode()
    }

    /// Refuse a call routed by mount-table version `routed_by` for a path
    /// this nameservice does not own (see `namespace::ownership`), by the
    /// applied ownership row (kept in memory); calls that were not routed
    /// cost nothing. A write is checked again when it is planned.
    pub fn check_routed(&self, routed_by: u64, op: &Op) -> Result<(), FsError> {
        if routed_by == 0 {
            return Ok(());
        }
        let owned = self.shared.ownership();
        namespace::ownership::check_routed(owned.as_deref(), routed_by, op)
    }

    /// Reads this member has served (leader or follower).
    pub fn reads_served(&self) -> u64 {
        self.reads_served.load(Ordering::Relaxed)
    }

    /// Execute one client call: writes through the log, reads after a lease check.
    pub fn call(&self, ctx: CallCtx, op: Op) -> impl Future<Output = Result<OpResult, FsError>> + Send + '_ {
        self.call_at(ctx, op, "")
    }

    /// A call on the leader's path, its result stamped with block tokens.
    fn call_at<'a>(
        &'a self,
        ctx: CallCtx,
        mut op: Op,
        client_host: &'a str,
    ) -> impl Future<Output = Result<OpResult, FsError>> + Send + 'a {
        let (user, grant) = (ctx.user.clone(), block_access::grant_for(&op));
        async move {
            check_ctx(&ctx)?;
            if self.shared.config().is_none() {
                // Boxed: rare (a new nameservice), and its future is large.
                Box::pin(self.wait_formatted()).await?;
            }
            self.name_block_file(&mut op)?;
            let mut r = if op.is_write() {
                let watched = self.failpoints.watches(&op);
                // Boxed: the write path's future is large, and unboxed it
                // would make every read's future as large.
                let r = Box::pin(self.data.write(ctx, op, client_host)).await;
                if watched && r.is_ok() {
                    self.failpoints.crash_after_commit();
                }
                r?
            } else {
                let read_index = self.linearize().await?;
                tracing::debug!(target: "raftfs::reads", call = ?op, read_index, "leader read");
                self.reads_served.fetch_add(1, Ordering::Relaxed);
                let cfg = self
                    .shared
                    .config()
                    .ok_or_else(|| FsError::Unavailable("namespace not formatted yet".into()))?;
                let r = namespace::read(&cfg, &*self.shared.store.view(), &ctx, &op)?;
                self.data.after_read(&ctx, &op, r, client_host)?
            };
            self.block_access.stamp(&user, grant, &mut r)?;
            Ok(r)
        }
    }

    /// A pipeline op that names only its block (an empty path, as Hadoop's
    /// `updateBlockForPipeline` and `updatePipeline` send it) with the path
    /// of the file the block belongs to (`/.reserved/.inodes/<id>`), read
    /// from applied state; every other op as it is. The op then runs, and
    /// is checked and locked, as if the client had named the file.
    fn name_block_file(&self, op: &mut Op) -> Result<(), FsError> {
        let (path, block_id) = match op {
            Op::UpdateBlockForPipeline { path, block } if path.is_empty() => (path, block.id),
            Op::UpdatePipeline { path, old, .. } if path.is_empty() => (path, old.id),
            _ => return Ok(()),
        };
        let view = self.shared.store.view();
        let record = view.block(block_id).map_err(FsError::from)?;
        let record = record.ok_or_else(|| FsError::FileNotFound(format!("no file has block blk_{block_id}")))?;
        *path = format!("/.reserved/.inodes/{}", record.inode);
        Ok(())
    }

    async fn wait_formatted(&self) -> Result<(), FsError> {
        let mut applied = self.shared.applied_index();
        let deadline = tokio::time::Instant::now() + Duration::from_millis(FORMAT_WAIT_MS);
        while self.shared.config().is_none() {
            // Only a leader can get the format committed; elsewhere say where to go.
            if let Some(leader) = self.raft.current_leader().await {
                if leader != self.version.member_id {
                    let addr = self.addr_of(leader).unwrap_or_default();
                    return Err(FsError::NotLeader {
                        leader: Some(LeaderHint {
                            member_id: leader,
                            addr,
                        }),
                    });
                }
            }
            if tokio::time::timeout_at(deadline, applied.changed()).await.is_err() {
                return Err(FsError::Unavailable(
                    "the namespace is not formatted yet (no leader elected?)".into(),
                ));
            }
        }
        Ok(())
    }

    /// This member's health as of its last check.
    pub fn health(&self) -> Health {
        self.health.read().clone()
    }

    /// Wait until this member's Raft node stops by itself, and say why: a
    /// log write or fsync that failed (openraft stops rather than go on
    /// with a log it could not make durable; a later fsync that succeeds
    /// would prove nothing about the writes the failed one covered), or a
    /// state machine error. The member can then no longer vote, lead or
    /// apply: `raftfs metaserver` exits with the reason, as a NameNode
    /// whose journal failed does, and is restarted once the disk is fixed.
    /// Boxed, as [`Member::open`] is.
    #[inline(never)]
    pub fn raft_stopped(&self) -> BoxFuture<'_, String> {
        Box::pin(group::raft_stopped(&self.raft))
    }

    /// Stop the background tasks (and wait until they are gone: they hold
    /// the store, which a reopen in this process must find closed) and Raft.
    /// Boxed, as [`Member::open`] is.
    #[inline(never)]
    pub fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let tasks: Vec<_> = self.tasks.lock().drain(..).collect();
            group::stop_tasks(tasks).await;
            self.data.writes.shutdown().await;
            if let Err(e) = self.raft.shutdown().await {
                tracing::warn!(error = %e, "shut down raft");
            }
        })
    }
}

/// Linearizable reads: serve under the leader lease (bounded by openraft to
/// the election timeout) while a quorum acknowledged the leader recently;
/// otherwise send a heartbeat round and wait for it (read-index), rather
/// than fail and make the client back off.
pub(crate) fn read_option() -> LinearizerOption {
    LinearizerOption::new(None, true)
}

/// Write VERSION for one member of a new nameservice.
pub fn format_member(dir: &Path, v: &VersionFile) -> Result<(), FsError> {
    layout::format(dir, v).map_err(|e| FsError::InvalidArgument(e.to_string()))
}

/// How long the monitor waits for a follower to report its health.
const HEALTH_QUERY_TIMEOUT_MS: u64 = 500;

/// A peer's health as its MemberInfo reports it; None if it does not answer.
async fn peer_health(addr: &str, dialer: &Dialer) -> Option<String> {
    let info = raftfs_raft::peer_info::peer_info(dialer, addr, PeerRole::Member, HEALTH_QUERY_TIMEOUT_MS).await;
    info.ok().map(|i| i.health)
}
