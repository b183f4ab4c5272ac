//! One write prepared on the leader (`--exec leader`): lock its paths,
//! plan it against committed state and the leader's [`LeaderEpoch`],
//! reserve its quota charges, and hand back what to propose together with
//! what must be held until it is applied ([`Attempt::Propose`]).
//!
//! A plan that fails is answered at once and leaves no log entry (once the
//! caller has confirmed its leadership: [`Attempt::Refused`]); so is a
//! call the retry table already answered. A call is planned again (the
//! caller loops, at most [`MAX_PLAN_ATTEMPTS`] times) when its plan needs a
//! stronger lock (a directory near its item limit) or its quota reservation
//! lost a race with another write in flight.

use std::sync::Arc;

use raftfs_proto::{codec, CallCtx, FsError, Op, OpResult};

use super::epoch::{charges_of, LeaderEpoch, Reservation};
use crate::locks::{lock_paths, Busy, LockError, LockPool, Locked, PathLockRequest, PathLocks, PathMode, Wait};
use crate::namespace::{
    check_ctx, is_cached_in_retry_table, live_retry, plan_on_leader, LeaderEnv, NsConfig, PlannedWrite,
};
use crate::path::FsPath;
use crate::store::Store;

/// Most times one call is locked and planned before it is answered
/// `Unavailable` (each further attempt follows a lost race).
pub const MAX_PLAN_ATTEMPTS: usize = 16;

/// What one attempt came to.
pub enum Attempt {
    /// Answered without a log entry, and safe to answer as it is: an
    /// error of the attempt itself (retryable).
    Answered(Result<OpResult, FsError>),
    /// The plan failed: the op's answer, with no log entry. The plan read
    /// this member's committed state; on a Raft member that is the
    /// namespace's current state only if the member still led in the
    /// epoch's term after the plan, which the caller confirms before
    /// answering (a deposed leader that does not know it yet, or one
    /// restarted as leader, would otherwise answer from a past state).
    Refused(FsError),
    /// The call was already executed: its first result, from the retry
    /// table (a client's retry after a lost reply or a failover).
    Retried(Result<OpResult, FsError>),
    /// Propose `write`; keep `hold` until it is applied or known lost.
    Propose { write: PlannedWrite, hold: Hold },
    /// A lock was busy (only with [`Wait::Try`]): nothing is held; wait
    /// for it ([`Busy::wait`]) or take every lock again blocking.
    WouldBlock(Busy),
    /// Plan again (a stronger lock is now requested, or a reservation lost a race).
    Again,
}

/// What a proposed write holds until it is applied.
#[derive(Debug)]
pub struct Hold {
    pub locks: PathLocks,
    reservation: Reservation,
}

impl Hold {
    /// The write was applied (`true`) or will never be (`false`): give the
    /// quota reservation back or settle it, then release the locks.
    pub fn finish(self, applied: bool) {
        self.reservation.finish(applied);
        drop(self.locks);
    }
}

/// The paths `op` locks and how (REFERENCE.md's patterns). A path that
/// does not parse is not locked: the plan reports it as it would anyway.
pub fn lock_requests(op: &Op) -> Vec<PathLockRequest> {
    let one = |p: &str, mode| FsPath::parse(p).ok().map(|path| PathLockRequest { path, mode });
    match op {
        Op::Mkdirs { path, .. } => one(path, PathMode::CreateEdge).into_iter().collect(),
        Op::Create { path, .. } | Op::Delete { path, .. } => one(path, PathMode::WriteEdge).into_iter().collect(),
        Op::Rename { src, dst } | Op::Rename2 { src, dst, .. } => one(src, PathMode::WriteEdge)
            .into_iter()
            .chain(one(dst, PathMode::WriteEdge))
            .collect(),
        Op::Complete { path, .. }
        | Op::SetPermission { path, .. }
        | Op::SetOwner { path, .. }
        | Op::SetReplication { path, .. }
        | Op::SetTimes { path, .. }
        | Op::SetQuota { path, .. }
        | Op::AddBlock { path, .. }
        | Op::AbandonBlock { path, .. }
        | Op::UpdateBlockForPipeline { path, .. }
        | Op::UpdatePipeline { path, .. }
        | Op::RecoverLease { path }
        | Op::Append { path }
        | Op::Truncate { path, .. } => one(path, PathMode::WriteInode).into_iter().collect(),
        // The target's directory in WRITE: the sources are its children
        // (the plan refuses any that is not), and a WRITE lock on a
        // directory's inode keeps every other write below it out.
        Op::Concat { target, .. } => FsPath::parse(target)
            .ok()
            .filter(|t| t.start.is_none() && !t.components.is_empty())
            .and_then(|t| one(&t.prefix_text(t.components.len() - 1), PathMode::WriteInode))
            .into_iter()
            .collect(),
        Op::CommitBlockSynchronization { path_inode, .. } => {
            one(&format!("/.reserved/.inodes/{path_inode}"), PathMode::WriteInode)
                .into_iter()
                .collect()
        }
        // Mergeable (a lease renewal, a set of DataNode names, delegation
        // tokens: see `namespace::delegation`) or reads.
        Op::RenewLease
        | Op::SetDatanodeAdmin { .. }
        | Op::GetDelegationToken { .. }
        | Op::RenewDelegationToken { .. }
        | Op::CancelDelegationToken { .. }
        | Op::AddDelegationKey { .. }
        | Op::ExpireDelegationTokens { .. }
        | Op::SetOwnership { .. }
        | Op::GetFileInfo { .. }
        | Op::GetListing { .. }
        | Op::GetContentSummary { .. }
        | Op::GetBlockLocations { .. }
        | Op::GetAdditionalDatanode { .. } => Vec::new(),
    }
}

/// One write's preparation on the leader; see the module docs.
pub struct Preparer<'a, S: Store + ?Sized> {
    pub epoch: &'a Arc<LeaderEpoch>,
    pub pool: &'a LockPool,
    pub store: &'a S,
    pub cfg: &'a NsConfig,
    pub ctx: &'a CallCtx,
    pub op: &'a Op,
    /// The plan's log time (from [`LeaderEpoch::clock`]).
    pub time_ms: i64,
    /// The op's paths; an attempt may add a directory to lock in WRITE.
    pub requests: Vec<PathLockRequest>,
}

impl<'a, S: Store + ?Sized> Preparer<'a, S> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        epoch: &'a Arc<LeaderEpoch>,
        pool: &'a LockPool,
        store: &'a S,
        cfg: &'a NsConfig,
        ctx: &'a CallCtx,
        op: &'a Op,
        time_ms: i64,
    ) -> Result<Preparer<'a, S>, FsError> {
        check_ctx(ctx)?;
        Ok(Preparer {
            epoch,
            pool,
            store,
            cfg,
            ctx,
            op,
            time_ms,
            requests: lock_requests(op),
        })
    }

    /// Lock, plan and reserve once.
    pub fn attempt(&mut self, wait: Wait) -> Attempt {
        match self.try_attempt(wait) {
            Ok(a) => a,
            Err(e) => Attempt::Answered(Err(e)),
        }
    }

    fn try_attempt(&mut self, wait: Wait) -> Result<Attempt, FsError> {
        let Locked { locks, view } = match lock_paths(self.pool, self.store, &self.requests, wait) {
            Ok(l) => l,
            Err(LockError::WouldBlock(busy)) => return Ok(Attempt::WouldBlock(busy)),
            Err(LockError::Moving(id)) => {
                return Err(FsError::Unavailable(format!(
                    "inode {id} kept moving while its path was being locked"
                )))
            }
            Err(LockError::Store(e)) => return Err(e.into()),
        };
        let cached = is_cached_in_retry_table(self.op);
        let key = (self.ctx.client_id.clone(), self.ctx.call_id);
        let exclusive = |id| locks.writes_inode(id);
        let env = LeaderEnv {
            ids: &self.epoch.ids,
            usage: &self.epoch.quota,
            exclusive: &exclusive,
            escalate: Default::default(),
        };
        let planned = {
            // The walk's view shows every locked key as it is now (the
            // latest commit); dropped before anything else reads the store.
            let view = view;
            if cached {
                if let Some(rec) = live_retry(&*view, &key, self.time_ms)? {
                    return Ok(Attempt::Retried(codec::decode(&rec.result, "retry record")));
                }
            }
            plan_on_leader(self.cfg, &*view, &env, self.ctx, self.op, self.time_ms)
        };
        if let Some(dir) = env.escalate.take() {
            self.escalate(dir)?;
            return Ok(Attempt::Again);
        }
        let delta = match planned {
            Ok(d) => d,
            Err(e) => return Ok(Attempt::Refused(e)),
        };
        let Some(reservation) = self.epoch.reserve(self.store, charges_of(&delta.mutations))? else {
            return Ok(Attempt::Again);
        };
        Ok(Attempt::Propose {
            write: PlannedWrite {
                retry: cached.then_some(key),
                mutations: delta.mutations,
                result: delta.result,
            },
            hold: Hold { locks, reservation },
        })
    }

    /// Lock directory `dir`'s inode in WRITE from the next attempt on (by
    /// id: its path is the one the op's own path runs through).
    fn escalate(&mut self, dir: crate::inode::InodeId) -> Result<(), FsError> {
        if self.requests.len() >= crate::locks::MAX_PATHS_PER_OPERATION {
            return Err(FsError::Unavailable(format!(
                "directory {dir} is near its item limit and {} paths are locked already",
                self.requests.len()
            )));
        }
        self.requests.push(PathLockRequest {
            path: FsPath::parse(&format!("/.reserved/.inodes/{dir}"))?,
            mode: PathMode::WriteInode,
        });
        Ok(())
    }
}
