//! Group commit of client writes into shared log entries.
//!
//! Writes queue here; a proposer task takes every op waiting (up to
//! [`MAX_OPS_PER_ENTRY`]) into one [`Command::Ops`] entry stamped with the
//! leader's clock, so concurrent client ops share one entry, one append and
//! one fsync. Up to [`MAX_PROPOSALS_IN_FLIGHT`] entries are in flight at once
//! (openraft pipelines them). Each caller gets its own op's result; if the
//! proposal itself fails (leader change), every op in it gets that error,
//! which is retryable: the client retries with the same call id and the
//! retry table makes that safe.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, Semaphore};

use raftfs_proto::{CallCtx, FsError, Op, OpResult};

use super::member::now_ms;
use crate::raft::{Command, Raft};

/// Most client ops carried by one log entry (the default of `--max-ops-per-entry`).
pub const MAX_OPS_PER_ENTRY: usize = 256;
/// Most entries proposed and not yet applied at once.
pub const MAX_PROPOSALS_IN_FLIGHT: usize = 64;
/// Most writes waiting for a proposal slot.
pub const MAX_QUEUED_WRITES: usize = 16 * 1024;

type Reply = oneshot::Sender<Result<OpResult, FsError>>;
type WriteErrorMap = fn(
    openraft::errors::RaftError<crate::raft::TypeConfig, openraft::errors::ClientWriteError<crate::raft::TypeConfig>>,
) -> FsError;

#[derive(Clone)]
pub struct Batcher {
    tx: mpsc::Sender<(CallCtx, Op, Reply)>,
}

impl Batcher {
    /// Start the proposer; `max_ops` (1..=[`MAX_OPS_PER_ENTRY`]) bounds the ops per entry.
    pub fn start(raft: Raft, max_ops: usize, map_err: WriteErrorMap) -> Batcher {
        let (tx, rx) = mpsc::channel(MAX_QUEUED_WRITES);
        tokio::spawn(propose_loop(raft, rx, max_ops.clamp(1, MAX_OPS_PER_ENTRY), map_err));
        Batcher { tx }
    }

    /// Queue one write and wait for its result.
    pub async fn write(&self, ctx: CallCtx, op: Op) -> Result<OpResult, FsError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send((ctx, op, reply))
            .await
            .map_err(|_| FsError::Unavailable("member is shutting down".into()))?;
        rx.await
            .map_err(|_| FsError::Unavailable("member is shutting down".into()))?
    }
}

async fn propose_loop(
    raft: Raft,
    mut rx: mpsc::Receiver<(CallCtx, Op, Reply)>,
    max_ops: usize,
    map_err: WriteErrorMap,
) {
    let slots = Arc::new(Semaphore::new(MAX_PROPOSALS_IN_FLIGHT));
    while let Some(first) = rx.recv().await {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        // Take what else is waiting now (more arrives while the slot was awaited).
        let mut batch = vec![first];
        while batch.len() < max_ops {
            match rx.try_recv() {
                Ok(w) => batch.push(w),
                Err(_) => break,
            }
        }
        let raft = raft.clone();
        tokio::spawn(async move {
            let (ops, replies): (Vec<(CallCtx, Op)>, Vec<Reply>) =
                batch.into_iter().map(|(c, o, r)| ((c, o), r)).unzip();
            let n = ops.len();
            match raft.client_write(Command::Ops { time_ms: now_ms(), ops }).await {
                Ok(resp) => {
                    let results = resp.data.results;
                    assert_eq!(results.len(), n, "one result per proposed op");
                    for (reply, r) in replies.into_iter().zip(results) {
                        let _ = reply.send(r);
                    }
                }
                Err(e) => {
                    let e = map_err(e);
                    for reply in replies {
                        let _ = reply.send(Err(e.clone()));
                    }
                }
            }
            drop(permit);
        });
    }
}
