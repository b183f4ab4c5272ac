//! The member's part of the data path (DESIGN.md §6): what a write of a
//! data op needs besides the log (safe mode, pipeline targets, waiting for a
//! block's minimum replicas, starting block recoveries), what a read needs
//! besides the namespace (replica locations), and the periodic work of the
//! block manager and the lease monitor.
//!
//! Everything non-deterministic happens here, before a proposal or after
//! its result: placement and replica counts are soft state, so they never
//! enter `plan`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::async_runtime::WatchReceiver;
use openraft::ServerState;

use raftfs_proto::{Block, CallCtx, FsError, LocatedBlocks, Op, OpResult};

use crate::blocks::BlockManager;
use crate::exec::pipeline::WritePipeline;
use crate::namespace::data::{RECOVERY_HOLDER, TRUNCATE_HOLDER};
use crate::raft::state_machine::SmShared;
use crate::raft::Raft;

/// The default lease hard limit (HDFS `dfs.namenode.lease-hard-limit-sec`, 20 min).
pub const DEFAULT_LEASE_HARD_LIMIT_MS: u64 = 20 * 60 * 1000;
/// How long addBlock and complete wait for the previous block's replicas to
/// be reported before answering "not yet" (HDFS answers at once and makes
/// the client poll from 400 ms).
pub const MIN_REPLICAS_WAIT_MS: u64 = 2_000;
/// How often the leader looks for expired leases (HDFS `dfs.namenode.lease-recheck-interval-ms`).
pub const LEASE_CHECK_INTERVAL_MS: u64 = 2_000;
/// A lease recovery not finished after this long is started again.
pub const RECOVERY_RETRY_MS: u64 = 10_000;
/// Leases and files looked at per lease check.
const MAX_LEASES_PER_CHECK: usize = 10_000;

/// What the member's own background work needs to act on the namespace.
#[derive(Clone)]
pub(crate) struct DataPath {
    pub raft: Raft,
    pub writes: Arc<WritePipeline>,
    pub blocks: Arc<BlockManager>,
    pub shared: Arc<SmShared>,
    /// The client id of this member's own calls, and their call ids.
    pub system_client: Arc<str>,
    pub system_calls: Arc<AtomicU64>,
    pub superuser: Arc<str>,
    pub lease_hard_limit_ms: u64,
    /// Delegation token periods (`--delegation-*`).
    pub delegation: raftfs_trust::DelegationTokenTimes,
    /// One new master key at a time.
    pub delegation_key_lock: Arc<tokio::sync::Mutex<()>>,
}

impl DataPath {
    pub fn is_leader(&self) -> bool {
        self.raft.metrics().borrow_watched().state == ServerState::Leader
    }

    /// A call made by the member itself, as the superuser.
    pub fn system_ctx(&self) -> CallCtx {
        CallCtx {
            client_id: self.system_client.to_string(),
            call_id: self.system_calls.fetch_add(1, Ordering::Relaxed),
            user: self.superuser.to_string(),
            groups: vec![],
            routed_by: 0,
        }
    }

    fn status_of(&self, ctx: &CallCtx, path: &str) -> Result<raftfs_proto::FileStatus, FsError> {
        let cfg = self
            .shared
            .config()
            .ok_or_else(|| FsError::Unavailable("namespace not formatted yet".into()))?;
        match crate::namespace::read(
            &cfg,
            &*self.shared.store.view(),
            ctx,
            &Op::GetFileInfo { path: path.into() },
        )? {
            OpResult::Status(Some(s)) => Ok(s),
            _ => Err(FsError::FileNotFound(format!("File does not exist: {path}"))),
        }
    }

    /// Run a write `op` through the log, with what the data path adds.
    pub async fn write(&self, ctx: CallCtx, op: Op, client_host: &str) -> Result<OpResult, FsError> {
        if !self.is_leader() {
            // The log answers NotLeader with a hint; nothing to prepare here.
            return self.writes.write(ctx, op).await;
        }
        if self.blocks.in_safemode() {
            let s = self.blocks.safemode_status();
            return Err(FsError::SafeMode(format!(
                "Cannot {} {}. Name node is in safe mode.\n{}",
                op.name(),
                op.src_path(),
                s.message
            )));
        }
        let op = self.prepare_delegation_op(op).await?;
        match &op {
            Op::AddBlock {
                path,
                previous,
                excluded,
            } => {
                if let Some(p) = previous {
                    self.wait_replicas(p).await?;
                }
                let status = self.status_of(&ctx, path)?;
                let targets = self.blocks.choose_targets(
                    status.replication as usize,
                    client_host,
                    excluded,
                    &[],
                    status.block_size,
                )?;
                let mut r = self.writes.write(ctx, op).await?;
                if let OpResult::Located(lb) = &mut r {
                    lb.locations = targets;
                }
                Ok(r)
            }
            Op::Complete { last: Some(b), .. } => {
                if !self
                    .blocks
                    .wait_min_replicas(b, Duration::from_millis(MIN_REPLICAS_WAIT_MS))
                    .await
                {
                    return Ok(OpResult::Bool(false));
                }
                self.writes.write(ctx, op).await
            }
            Op::RecoverLease { .. } | Op::Truncate { .. } => {
                let r = self.writes.write(ctx, op).await?;
                self.after_recover_lease(r).await
            }
            Op::Create { path, .. } | Op::Append { path } => {
                let path = path.clone();
                let r = self.writes.write(ctx, op).await;
                match r {
                    Err(FsError::RecoveryInProgress(m)) => {
                        self.recover_if_needed(&path).await;
                        Err(FsError::RecoveryInProgress(m))
                    }
                    Ok(OpResult::Appended {
                        status,
                        last: Some(mut lb),
                    }) => {
                        self.locate_one(&mut lb, client_host);
                        Ok(OpResult::Appended { status, last: Some(lb) })
                    }
                    other => other,
                }
            }
            _ => self.writes.write(ctx, op).await,
        }
    }

    /// Wait for the block a writer finished to have its minimum replicas.
    async fn wait_replicas(&self, b: &Block) -> Result<(), FsError> {
        if self
            .blocks
            .wait_min_replicas(b, Duration::from_millis(MIN_REPLICAS_WAIT_MS))
            .await
        {
            Ok(())
        } else {
            Err(FsError::NotReplicatedYet(format!("Not replicated yet: {b}")))
        }
    }

    fn locate_one(&self, lb: &mut raftfs_proto::LocatedBlock, client_host: &str) {
        let mut lbs = LocatedBlocks {
            file_length: 0,
            blocks: vec![lb.clone()],
            under_construction: true,
            last_block_complete: false,
            block_pool_id: String::new(),
        };
        self.blocks.locate(&mut lbs, client_host);
        *lb = lbs.blocks.pop().expect("one block");
    }

    /// Add what only the block manager knows to a read's result.
    pub fn after_read(&self, ctx: &CallCtx, op: &Op, r: OpResult, client_host: &str) -> Result<OpResult, FsError> {
        match (op, r) {
            (Op::GetBlockLocations { .. }, OpResult::Blocks(mut lbs)) => {
                self.blocks.locate(&mut lbs, client_host);
                lbs.block_pool_id = self.shared.format_info().map(|f| f.block_pool_id).unwrap_or_default();
                Ok(OpResult::Blocks(lbs))
            }
            (
                Op::GetAdditionalDatanode {
                    path,
                    existing,
                    excluded,
                    count,
                    ..
                },
                OpResult::Located(mut lb),
            ) => {
                let block_size = self.status_of(ctx, path)?.block_size;
                lb.locations = self.blocks.choose_targets(
                    (*count as usize).min(raftfs_proto::limits::MAX_REPLICATION as usize),
                    client_host,
                    excluded,
                    existing,
                    block_size,
                )?;
                Ok(OpResult::Located(lb))
            }
            (_, r) => Ok(r),
        }
    }

    /// recoverLease's (or truncate's) log result says what to do on the DataNodes.
    async fn after_recover_lease(&self, r: OpResult) -> Result<OpResult, FsError> {
        match r {
            OpResult::RecoveryStarted {
                inode,
                block,
                recovery_id,
            } => self.start_recovery(inode, block, recovery_id, false).await,
            OpResult::TruncateStarted {
                inode,
                block,
                recovery_id,
            } => self.start_recovery(inode, block, recovery_id, true).await,
            r => Ok(r),
        }
    }

    /// Ask the replicas of `block` (the last block of file `inode`) to agree
    /// on its length (with `truncate`, to be cut to `block.num_bytes`); a
    /// block no DataNode ever received is dropped and the file closed at
    /// once. `Bool(true)` when the file is closed.
    async fn start_recovery(
        &self,
        inode: u64,
        block: Block,
        recovery_id: u64,
        truncate: bool,
    ) -> Result<OpResult, FsError> {
        let replicas = self.blocks.replica_nodes(block.id);
        if !replicas.is_empty() {
            tracing::info!(%block, inode, recovery_id, truncate, primary = %replicas[0].addr, "block recovery started");
            self.blocks
                .queue_recovery(inode, block, recovery_id, replicas, truncate);
            return Ok(OpResult::Bool(false));
        }
        if block.num_bytes > 0 {
            // Data was committed but no replica is known (yet): wait for reports.
            tracing::warn!(%block, inode, "no replica of the block to recover is known yet");
            return Ok(OpResult::Bool(false));
        }
        let op = Op::CommitBlockSynchronization {
            path_inode: inode,
            block,
            new_gen_stamp: recovery_id,
            new_length: 0,
            nodes: vec![],
        };
        self.writes.write(self.system_ctx(), op).await?;
        Ok(OpResult::Bool(true))
    }

    /// A create or append met a file whose writer's soft limit passed:
    /// start its lease recovery, unless one is running.
    async fn recover_if_needed(&self, path: &str) {
        let holder = {
            let view = self.shared.store.view();
            crate::namespace::lease_holder_of(&*view, path)
        };
        match holder {
            Ok(Some(h)) if h != RECOVERY_HOLDER && h != TRUNCATE_HOLDER => {
                let op = Op::RecoverLease { path: path.into() };
                match self.writes.write(self.system_ctx(), op).await {
                    Ok(r) => {
                        if let Err(e) = self.after_recover_lease(r).await {
                            tracing::warn!(path, error = %e, "start lease recovery");
                        }
                    }
                    Err(e) => tracing::warn!(path, error = %e, "start lease recovery"),
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(path, error = %e, "look up lease holder"),
        }
    }

    /// A DataNode finished a block recovery: commit its result.
    pub async fn commit_block_sync(&self, c: raftfs_proto::datanode::CommitBlockSync) -> Result<(), FsError> {
        let op = Op::CommitBlockSynchronization {
            path_inode: c.inode,
            block: c.block,
            new_gen_stamp: c.new_gen_stamp,
            new_length: c.new_length,
            nodes: c.nodes,
        };
        self.writes.write(self.system_ctx(), op).await.map(|_| ())
    }

    /// The block manager's monitor on every member, and the lease monitor
    /// on the leader, until the member stops.
    pub async fn run_monitors(self) {
        let every = Duration::from_millis(self.blocks.config().monitor_interval_ms.max(10));
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_lease_check = Instant::now();
        let mut last_sweep = Instant::now();
        loop {
            tick.tick().await;
            let leader = self.is_leader();
            let stats = self.blocks.monitor_tick(Instant::now(), leader);
            if stats.newly_dead > 0 || stats.copies_scheduled > 0 || stats.deletions_scheduled > 0 {
                tracing::info!(?stats, "replication monitor");
            }
            if leader && last_lease_check.elapsed() >= Duration::from_millis(LEASE_CHECK_INTERVAL_MS) {
                last_lease_check = Instant::now();
                if let Err(e) = self.check_leases().await {
                    tracing::warn!(error = %e, "lease check");
                }
                let sweep = last_sweep.elapsed()
                    >= Duration::from_millis(super::delegation_keeper::DELEGATION_SWEEP_INTERVAL_MS);
                if sweep {
                    last_sweep = Instant::now();
                }
                if let Err(e) = self.tend_delegation_tokens(sweep).await {
                    tracing::warn!(error = %e, "delegation tokens");
                }
            }
        }
    }

    /// Recover the files of writers past the hard limit, and restart
    /// recoveries that did not finish.
    async fn check_leases(&self) -> Result<(), FsError> {
        if self.blocks.in_safemode() {
            return Ok(());
        }
        // Ages in log time, reckoned on the monotonic clock: a stepped wall
        // clock neither expires a live lease nor keeps a dead one.
        let now = self.shared.log_clock.estimate();
        let leases = self.shared.store.leases_page("", MAX_LEASES_PER_CHECK)?;
        for (holder, rec) in leases {
            let age = now.saturating_sub(rec.renewed_ms);
            let expired = if holder == RECOVERY_HOLDER || holder == TRUNCATE_HOLDER {
                age > RECOVERY_RETRY_MS as i64
            } else {
                age > self.lease_hard_limit_ms as i64
            };
            if !expired {
                continue;
            }
            for inode in self.shared.store.lease_files(&holder, MAX_LEASES_PER_CHECK)? {
                let path = format!("/.reserved/.inodes/{inode}");
                tracing::info!(holder, inode, age_ms = age, "lease expired: recovering the file");
                match self.writes.write(self.system_ctx(), Op::RecoverLease { path }).await {
                    Ok(r) => {
                        self.after_recover_lease(r).await?;
                    }
                    Err(e) => tracing::warn!(inode, error = %e, "recover lease"),
                }
            }
        }
        Ok(())
    }
}
