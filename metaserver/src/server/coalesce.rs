//! [`Coalesced`]: one read-index request shared by every linearizable read
//! waiting for it.
//!
//! Linearizability: a read may use a read index only from a request *issued
//! after the read arrived* (the leader confirms its leadership and reports
//! its commit index at that moment). A read therefore joins the next round,
//! never the one in flight: rounds run one after another, each answering
//! the reads that arrived before it started. However many reads are
//! concurrent, the source is asked once per round trip — on the leader one
//! message to the Raft core per round instead of per read (under 64 callers
//! the core's loop was ~17% of a leader's CPU), on a follower one RPC to the
//! leader per round.
//!
//! Caveat: a round runs on its own task, so a reader that gives up (its
//! client went away) never strands the reads queued behind it; a round's
//! error is every one of its reads' error.

use std::future::Future;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use raftfs_proto::FsError;

/// Where read indexes come from: the local Raft core on the leader, or the
/// leader over RPC on a follower.
pub trait IndexSource: Send + Sync + 'static {
    /// A read index confirmed by a request that starts when this is called.
    fn fetch(&self) -> impl Future<Output = Result<u64, FsError>> + Send;
}

type Waiter = oneshot::Sender<Result<u64, FsError>>;

#[derive(Default)]
struct Round {
    in_flight: bool,
    next: Vec<Waiter>,
}

/// Coalesces concurrent read-index requests to `S` (see the module docs).
pub struct Coalesced<S> {
    source: S,
    round: Mutex<Round>,
}

impl<S: IndexSource> Coalesced<S> {
    pub fn new(source: S) -> Arc<Coalesced<S>> {
        Arc::new(Coalesced {
            source,
            round: Mutex::new(Round::default()),
        })
    }

    /// A read index from a request issued after this call began.
    pub async fn get(self: &Arc<Self>) -> Result<u64, FsError> {
        let (tx, rx) = oneshot::channel();
        let start = {
            let mut r = self.round.lock();
            r.next.push(tx);
            !std::mem::replace(&mut r.in_flight, true)
        };
        if start {
            let me = self.clone();
            tokio::spawn(async move { me.drive().await });
        }
        rx.await
            .unwrap_or_else(|_| Err(FsError::Unavailable("read index request dropped".into())))
    }

    /// Run rounds until no read is waiting.
    async fn drive(&self) {
        loop {
            let waiters = {
                let mut r = self.round.lock();
                if r.next.is_empty() {
                    r.in_flight = false;
                    return;
                }
                std::mem::take(&mut r.next)
            };
            let result = self.source.fetch().await;
            for w in waiters {
                let _ = w.send(result.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use super::*;

    /// Counts fetches; each returns the number of reads that had arrived
    /// when it started, after a delay that lets more reads arrive.
    struct Slow {
        arrived: Arc<AtomicU64>,
        fetches: AtomicU64,
    }

    impl IndexSource for Slow {
        async fn fetch(&self) -> Result<u64, FsError> {
            self.fetches.fetch_add(1, Ordering::SeqCst);
            let seen = self.arrived.load(Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(seen)
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_read_gets_an_index_fetched_after_it_arrived_and_rounds_are_shared() {
        let arrived = Arc::new(AtomicU64::new(0));
        let c = Coalesced::new(Slow {
            arrived: arrived.clone(),
            fetches: AtomicU64::new(0),
        });
        let mut tasks = Vec::new();
        for i in 0..200u64 {
            let (c, arrived) = (c.clone(), arrived.clone());
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(i % 50)).await;
                let me = arrived.fetch_add(1, Ordering::SeqCst) + 1;
                let index = c.get().await.expect("fetch");
                assert!(
                    index >= me,
                    "read {me} was answered by a fetch that started before it arrived (saw {index})"
                );
            }));
        }
        for t in tasks {
            t.await.expect("reader");
        }
        let fetches = c.source.fetches.load(Ordering::SeqCst);
        assert!(
            fetches < 100,
            "200 reads over ~50 ms took {fetches} fetches of 20 ms each"
        );
        assert!(fetches >= 2, "reads arriving during a round need another round");
    }

    struct Failing;

    impl IndexSource for Failing {
        async fn fetch(&self) -> Result<u64, FsError> {
            Err(FsError::Unavailable("no quorum".into()))
        }
    }

    #[tokio::test]
    async fn a_failed_round_fails_its_reads_and_the_next_round_runs() {
        let c = Coalesced::new(Failing);
        for _ in 0..3 {
            let e = c.get().await.expect_err("a failing source fails the read");
            assert!(e.is_retryable(), "{e}");
        }
    }
}
