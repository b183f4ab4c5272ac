//! Group commit of writes into shared log entries, and the [`Proposer`]
//! that gets an entry into the log (the member implements it over Raft;
//! this module knows nothing of Raft).
//!
//! Writes queue here (at most [`MAX_QUEUED_WRITES`]); a proposer task takes
//! every write waiting (up to `max` per entry) into one [`Command`] stamped
//! with the latest of their times, so concurrent writes share one entry,
//! one append and one fsync. Up to [`MAX_PROPOSALS_IN_FLIGHT`] entries are
//! in flight at once. Writes planned on the leader carry the term they were
//! planned in: an entry holds writes of one term only, and is proposed on
//! the condition that this member still leads in that term.
//!
//! Each caller gets its own write's result. If the proposal itself fails
//! (a leader change), every write in it gets that error, which is
//! retryable: the client retries with the same call id and the retry table
//! makes that safe.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot, Semaphore};

use raftfs_proto::{FsError, OpResult};

use crate::namespace::apply::WriteResults;
use crate::namespace::Command;

/// Most client writes carried by one log entry (the default of `--max-ops-per-entry`).
pub const MAX_OPS_PER_ENTRY: usize = 256;
/// Most entries proposed and not yet applied at once.
pub const MAX_PROPOSALS_IN_FLIGHT: usize = 64;
/// Most writes waiting for a proposal slot.
pub const MAX_QUEUED_WRITES: usize = 16 * 1024;

/// How the pipeline gets a command into the log.
pub trait Proposer: Send + Sync + 'static {
    /// Propose `cmd`; with `term`, only if this member still leads in that
    /// term. `Ok`: one result per write of `cmd`, once it is applied here.
    /// `Err`: the proposal failed (a leader change: it may or may not be
    /// applied later, by the next leader's log).
    fn propose(&self, cmd: Command, term: Option<u64>) -> BoxFuture<'static, Result<WriteResults, FsError>>;
    /// Whether this member leads now.
    fn leads(&self) -> bool;
    /// Confirm that this member still leads in `term` (a quorum
    /// acknowledged its leadership after this call began, or its lease
    /// says so): `Err` when it does not, or could not tell.
    fn confirm_leadership(&self, term: u64) -> BoxFuture<'static, Result<(), FsError>>;
    /// The error for a write this member cannot take, saying where the
    /// leader is when it knows.
    fn not_leader(&self) -> FsError;
}

/// A write's answer: `Err` when its proposal failed, else apply's result.
pub type Outcome = Result<Result<OpResult, FsError>, FsError>;

struct Item<T> {
    term: Option<u64>,
    time_ms: i64,
    payload: T,
    reply: oneshot::Sender<Outcome>,
}

/// Turns the writes of one entry into its command.
pub type Pack<T> = fn(i64, Vec<T>) -> Command;

/// A queue of writes of one kind (ops, or planned deltas) and its proposer task.
pub struct Batcher<T> {
    tx: mpsc::Sender<Item<T>>,
    stop: tokio::sync::watch::Sender<bool>,
    task: parking_lot::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl<T: Send + 'static> Batcher<T> {
    /// Start the proposer task; `max` (1..=[`MAX_OPS_PER_ENTRY`]) bounds the writes per entry.
    pub fn start(proposer: Arc<dyn Proposer>, max: usize, pack: Pack<T>) -> Batcher<T> {
        let (tx, rx) = mpsc::channel(MAX_QUEUED_WRITES);
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(propose_loop(
            proposer,
            rx,
            stopped,
            max.clamp(1, MAX_OPS_PER_ENTRY),
            pack,
        ));
        Batcher {
            tx,
            stop,
            task: parking_lot::Mutex::new(Some(task)),
        }
    }

    /// Stop the proposer task and wait until it is gone (it holds the
    /// proposer, and through it the member's Raft node and store).
    pub async fn shutdown(&self) {
        self.stop.send_replace(true);
        let task = self.task.lock().take();
        if let Some(t) = task {
            let _ = t.await;
        }
    }

    /// Queue one write (planned in `term`, if on the leader, at log time
    /// `time_ms`) and wait for its outcome.
    pub async fn submit(&self, term: Option<u64>, time_ms: i64, payload: T) -> Outcome {
        let (reply, rx) = oneshot::channel();
        let gone = || FsError::Unavailable("member is shutting down".into());
        self.tx
            .send(Item {
                term,
                time_ms,
                payload,
                reply,
            })
            .await
            .map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }
}

async fn propose_loop<T: Send + 'static>(
    proposer: Arc<dyn Proposer>,
    mut rx: mpsc::Receiver<Item<T>>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
    max: usize,
    pack: Pack<T>,
) {
    let slots = Arc::new(Semaphore::new(MAX_PROPOSALS_IN_FLIGHT));
    let mut carried: Option<Item<T>> = None;
    loop {
        let first = match carried.take() {
            Some(i) => i,
            None => tokio::select! {
                i = rx.recv() => match i {
                    Some(i) => i,
                    None => return,
                },
                _ = stopped.wait_for(|s| *s) => return,
            },
        };
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        // Take what else is waiting now (more arrives while the slot was
        // awaited), as long as it was planned in the same term.
        let term = first.term;
        let mut batch = vec![first];
        while batch.len() < max {
            match rx.try_recv() {
                Ok(i) if i.term == term => batch.push(i),
                Ok(i) => {
                    carried = Some(i);
                    break;
                }
                Err(_) => break,
            }
        }
        let proposer = proposer.clone();
        tokio::spawn(async move {
            let time_ms = batch.iter().map(|i| i.time_ms).max().expect("a batch is not empty");
            let (payloads, replies): (Vec<T>, Vec<_>) = batch.into_iter().map(|i| (i.payload, i.reply)).unzip();
            let n = payloads.len();
            match proposer.propose(pack(time_ms, payloads), term).await {
                Ok(results) => {
                    assert_eq!(results.len(), n, "one result per proposed write");
                    for (reply, r) in replies.into_iter().zip(results) {
                        let _ = reply.send(Ok(r));
                    }
                }
                Err(e) => {
                    for reply in replies {
                        let _ = reply.send(Err(e.clone()));
                    }
                }
            }
            drop(permit);
        });
    }
}
