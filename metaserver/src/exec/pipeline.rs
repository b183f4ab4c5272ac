//! [`WritePipeline`]: a member's writes, from op to log entry, in either
//! execution mode (see the [module docs](super)).
//!
//! `--exec apply`: the op is queued for the next `Command::Ops` entry.
//!
//! `--exec leader`: the write runs on this member only while it leads
//! *and* the blank entry of its term is applied: the member starts a
//! [`LeaderEpoch`] then ([`WritePipeline::start_epoch`]), so committed state
//! holds everything earlier terms committed. Until then a write waits (at
//! most [`EPOCH_WAIT_MS`]); on a member that does not lead it is answered
//! where the leader is. The write takes its locks without waiting on the
//! async worker thread; when a lock is busy it releases what it took,
//! awaits that lock's release (a waker, not a thread) and tries again, and
//! after [`MAX_ASYNC_LOCK_WAITS`] such waits takes them all blocking on a
//! blocking thread, where it queues fairly (never waiting for a lock on a
//! thread that runs other writes' futures); it is planned (a plan that
//! fails is answered once the member has confirmed it still leads in the
//! epoch's term, as a read would), its quota reserved, and its delta
//! queued for the next `Command::Deltas` entry of the epoch's term, which
//! is proposed only if the member still leads in that term. Locks are
//! released once the entry is applied (or the proposal failed). A delta
//! whose guard failed when applied is planned again. At most
//! [`MAX_LEADER_WRITES_IN_FLIGHT`] writes are between planning and apply.
//!
//! The leader also reclaims what recursive deletes detached
//! ([`WritePipeline::run_reclaimer`], `namespace::reclaim`), one bounded
//! entry at a time, each applied before the next is planned.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::sync::{watch, Semaphore};

use raftfs_proto::{CallCtx, FsError, Op, OpResult};

use super::batcher::{Batcher, Proposer};
use super::epoch::LeaderEpoch;
use super::prepare::{lock_requests, Attempt, Preparer, MAX_PLAN_ATTEMPTS};
use super::write_stats::WriteStats;
use super::ExecMode;
use crate::locks::{LockPool, PathLockRequest, Wait};
use crate::log_clock::LogClock;
use crate::namespace::{
    check_ctx, plan_reclaim_write, Command, NsConfig, PlannedWrite, ReclaimCursor, MAX_LEADER_WRITES_IN_FLIGHT,
};
use crate::store::{Store, StoreError};

/// How long a write on a new leader waits for its term's blank entry to be
/// applied before it is answered `Unavailable` (the client retries).
pub const EPOCH_WAIT_MS: u64 = 2_000;

/// Times a write waits asynchronously for a busy lock before it takes its
/// locks blocking, on a blocking thread (queued fairly behind readers).
pub const MAX_ASYNC_LOCK_WAITS: usize = 8;

/// How long the reclaimer rests when nothing is detached (or this member
/// does not lead) before it looks again.
pub const RECLAIM_IDLE_MS: u64 = 200;

/// The namespace config (`None` until the namespace is formatted).
pub type ConfigSource = Arc<dyn Fn() -> Option<NsConfig> + Send + Sync>;

/// A member's write pipeline (see the module docs).
pub struct WritePipeline {
    mode: ExecMode,
    store: Arc<dyn Store>,
    config: ConfigSource,
    proposer: Arc<dyn Proposer>,
    /// The time entries are proposed at (see [`LogClock`]).
    clock: Arc<LogClock>,
    ops: Batcher<(CallCtx, Op)>,
    deltas: Batcher<PlannedWrite>,
    pool: Arc<LockPool>,
    epoch: watch::Sender<Option<Arc<LeaderEpoch>>>,
    /// Serializes epoch changes.
    epoch_change: RwLock<()>,
    in_flight: Arc<Semaphore>,
    /// Retry-table answers and lock waits, for the member's metrics.
    stats: Arc<WriteStats>,
}

impl WritePipeline {
    /// A pipeline in `mode` over `store`, proposing through `proposer`, at
    /// most `max_per_entry` writes per log entry.
    pub fn start(
        mode: ExecMode,
        store: Arc<dyn Store>,
        config: ConfigSource,
        proposer: Arc<dyn Proposer>,
        clock: Arc<LogClock>,
        max_per_entry: usize,
    ) -> WritePipeline {
        let ops = Batcher::start(proposer.clone(), max_per_entry, |time_ms, ops: Vec<(CallCtx, Op)>| {
            Command::RoutedOps {
                time_ms,
                ops: ops
                    .into_iter()
                    .map(|(ctx, op)| {
                        let routed_by = ctx.routed_by;
                        (ctx, routed_by, op)
                    })
                    .collect(),
            }
        });
        let deltas = Batcher::start(proposer.clone(), max_per_entry, |time_ms, writes| Command::Deltas {
            time_ms,
            writes,
        });
        WritePipeline {
            mode,
            store,
            config,
            proposer,
            clock,
            ops,
            deltas,
            pool: Arc::new(LockPool::default()),
            epoch: watch::channel(None).0,
            epoch_change: RwLock::new(()),
            in_flight: Arc::new(Semaphore::new(MAX_LEADER_WRITES_IN_FLIGHT)),
            stats: Arc::default(),
        }
    }

    /// What the pipeline has counted since it started.
    pub fn stats(&self) -> &Arc<WriteStats> {
        &self.stats
    }

    pub fn mode(&self) -> ExecMode {
        self.mode
    }

    /// Stop proposing (the proposer tasks hold the member's Raft node and
    /// store) and wait until the tasks are gone.
    pub async fn shutdown(&self) {
        self.ops.shutdown().await;
        self.deltas.shutdown().await;
    }

    /// The term writes are planned in now, if any.
    pub fn epoch_term(&self) -> Option<u64> {
        self.epoch.borrow().as_ref().map(|e| e.term)
    }

    /// This member leads in `term` and has applied the term's blank entry:
    /// plan writes from committed state (a no-op if that epoch runs already).
    pub fn start_epoch(&self, term: u64) -> Result<(), StoreError> {
        let _g = self.epoch_change.write();
        if self.epoch_term() == Some(term) {
            return Ok(());
        }
        if (self.config)().is_none() {
            // A new nameservice: its first leader applies the blank entry
            // of its term before the format entry. Applying that entry
            // changes the Raft metrics, and the epoch starts then.
            tracing::debug!(
                term,
                "not formatted yet: planning starts once the format entry is applied"
            );
            return Ok(());
        }
        let epoch = LeaderEpoch::start(term, &*self.store)?;
        tracing::info!(term, "planning writes on this leader (--exec leader)");
        self.epoch.send_replace(Some(epoch));
        Ok(())
    }

    /// This member no longer leads: plan nothing more.
    pub fn end_epoch(&self) {
        let _g = self.epoch_change.write();
        if self.epoch.borrow().is_some() {
            self.epoch.send_replace(None);
        }
    }

    /// Execute one write (the caller checked it is one) in the pipeline's mode.
    pub async fn write(&self, ctx: CallCtx, op: Op) -> Result<OpResult, FsError> {
        match self.mode {
            ExecMode::Apply => self.ops.submit(None, self.clock.now(), (ctx, op)).await?,
            ExecMode::Leader => self.write_on_leader(ctx, op).await,
        }
    }

    /// The epoch to plan in, waiting for a new leader's blank entry.
    async fn current_epoch(&self) -> Result<Arc<LeaderEpoch>, FsError> {
        let mut rx = self.epoch.subscribe();
        let deadline = tokio::time::Instant::now() + Duration::from_millis(EPOCH_WAIT_MS);
        loop {
            if let Some(e) = rx.borrow_and_update().clone() {
                return Ok(e);
            }
            if !self.proposer.leads() {
                return Err(self.proposer.not_leader());
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err(FsError::Unavailable("member is shutting down".into())),
                Err(_) => {
                    return Err(FsError::Unavailable(format!(
                        "new leader: its term's first entry is not applied after {EPOCH_WAIT_MS} ms"
                    )))
                }
            }
        }
    }

    async fn write_on_leader(&self, ctx: CallCtx, op: Op) -> Result<OpResult, FsError> {
        check_ctx(&ctx)?;
        let epoch = self.current_epoch().await?;
        let cfg = (self.config)().ok_or_else(|| FsError::Unavailable("the namespace is not formatted yet".into()))?;
        let _slot = self
            .in_flight
            .acquire()
            .await
            .map_err(|_| FsError::Unavailable("member is shutting down".into()))?;
        let time_ms = epoch.clock(self.clock.now());
        let mut requests = lock_requests(&op);
        let mut async_waits = 0;
        let mut attempts = 0;
        while attempts < MAX_PLAN_ATTEMPTS {
            attempts += 1;
            let attempt = {
                let mut p = Preparer {
                    epoch: &epoch,
                    pool: &self.pool,
                    store: &*self.store,
                    cfg: &cfg,
                    ctx: &ctx,
                    op: &op,
                    time_ms,
                    requests: std::mem::take(&mut requests),
                };
                let a = p.attempt(Wait::Try);
                requests = p.requests;
                a
            };
            let attempt = match attempt {
                // Wait for the busy lock's release without a thread, a few
                // times; then take every lock blocking on a blocking
                // thread, where a waiting writer is queued fairly (try and
                // wait again could starve it behind a stream of readers).
                Attempt::WouldBlock(busy) if async_waits < MAX_ASYNC_LOCK_WAITS => {
                    async_waits += 1;
                    let waited = std::time::Instant::now();
                    busy.wait().await;
                    self.stats.lock_waited(waited.elapsed());
                    continue;
                }
                Attempt::WouldBlock(_) => {
                    let waited = std::time::Instant::now();
                    let (a, r) = self
                        .attempt_blocking(&epoch, &cfg, &ctx, &op, time_ms, std::mem::take(&mut requests))
                        .await?;
                    self.stats.lock_waited(waited.elapsed());
                    requests = r;
                    a
                }
                a => a,
            };
            match attempt {
                Attempt::Answered(r) => return r,
                Attempt::Retried(r) => {
                    self.stats.retry_answered();
                    return r;
                }
                Attempt::Refused(e) => {
                    // Planned on this member's state: the answer holds only
                    // if the member still led in the epoch's term after it.
                    self.proposer.confirm_leadership(epoch.term).await?;
                    return Err(e);
                }
                Attempt::Again | Attempt::WouldBlock(_) => continue,
                Attempt::Propose { write, hold } => {
                    match self.deltas.submit(Some(epoch.term), time_ms, write).await {
                        Ok(Ok(r)) => {
                            hold.finish(true);
                            return Ok(r);
                        }
                        // A failed guard: nothing was applied; plan again.
                        Ok(Err(_)) => hold.finish(false),
                        Err(e) => {
                            // The proposal failed: this member no longer
                            // leads in the epoch's term, and whatever
                            // becomes of the entry is the next leader's.
                            hold.finish(false);
                            return Err(e);
                        }
                    }
                }
            }
        }
        Err(FsError::Unavailable(format!(
            "{} was planned {MAX_PLAN_ATTEMPTS} times and lost a race each time",
            op.name()
        )))
    }

    /// On the leader, propose the next bounded reclaim entry
    /// (`namespace::reclaim`) and wait for it to be applied: inodes deleted
    /// or moved, 0 when nothing is detached or this member does not plan
    /// (it does not lead, or runs `--exec apply`).
    pub async fn reclaim_step(&self, cursor: &mut ReclaimCursor) -> Result<usize, FsError> {
        let Some(epoch) = self.epoch.borrow().clone() else {
            return Ok(0);
        };
        if self.mode != ExecMode::Leader {
            return Ok(0);
        }
        let planned = {
            let view = self.store.latest_view();
            plan_reclaim_write(&*view, cursor)?
        };
        let Some((write, n)) = planned else {
            return Ok(0);
        };
        // A failed guard (a step planned on state a racing step changed)
        // is answered like any write; the next step plans afresh.
        self.deltas
            .submit(Some(epoch.term), epoch.clock(self.clock.now()), write)
            .await??;
        Ok(n)
    }

    /// Reclaim detached subtrees for as long as the member runs: step after
    /// step while there is work and this member leads, resting
    /// [`RECLAIM_IDLE_MS`] otherwise.
    pub async fn run_reclaimer(self: Arc<Self>) {
        let mut cursor = ReclaimCursor::default();
        loop {
            match self.reclaim_step(&mut cursor).await {
                Ok(0) => tokio::time::sleep(Duration::from_millis(RECLAIM_IDLE_MS)).await,
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "reclaim step");
                    tokio::time::sleep(Duration::from_millis(RECLAIM_IDLE_MS)).await;
                }
            }
        }
    }

    /// One attempt that may wait for locks, on a blocking thread.
    async fn attempt_blocking(
        &self,
        epoch: &Arc<LeaderEpoch>,
        cfg: &NsConfig,
        ctx: &CallCtx,
        op: &Op,
        time_ms: i64,
        requests: Vec<PathLockRequest>,
    ) -> Result<(Attempt, Vec<PathLockRequest>), FsError> {
        let (epoch, pool, store) = (epoch.clone(), self.pool.clone(), self.store.clone());
        let (cfg, ctx, op) = (cfg.clone(), ctx.clone(), op.clone());
        tokio::task::spawn_blocking(move || {
            let mut p = Preparer {
                epoch: &epoch,
                pool: &pool,
                store: &*store,
                cfg: &cfg,
                ctx: &ctx,
                op: &op,
                time_ms,
                requests,
            };
            let a = p.attempt(Wait::Block);
            (a, p.requests)
        })
        .await
        .map_err(|e| FsError::Internal(format!("planning task: {e}")))
    }
}
