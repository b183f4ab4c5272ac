//! What a benchmark drives: the engine, an in-process single-member
//! nameservice, or a remote nameservice over gRPC.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;

use raftfs_client::FileSystem;
use raftfs_metaserver::exec::{Engine, ExecMode};
use raftfs_metaserver::namespace::{FormatInfo, DEFAULT_SUPERGROUP};
use raftfs_metaserver::server::member::now_ms;
use raftfs_metaserver::server::{Member, StoreKind};
use raftfs_metaserver::store::{MemStore, RocksStore, RocksStoreOptions, Store};
use raftfs_proto::{CallCtx, FsError, Op, OpResult};

/// The user benchmarks run as (the superuser of the namespaces they create).
pub const BENCH_USER: &str = "bench";

pub enum Target {
    Engine(Arc<Engine<Arc<dyn Store>>>),
    Raft(Arc<Member>),
    Remote(Arc<FileSystem>),
}

pub struct Bench {
    pub target: Target,
    call_ids: AtomicU64,
    _dir: Option<tempfile::TempDir>,
}

pub fn bench_format_info() -> FormatInfo {
    FormatInfo {
        cluster_id: "CID-bench".into(),
        namespace_id: 1,
        block_pool_id: "BP-bench".into(),
        nameservice: "bench".into(),
        superuser: BENCH_USER.into(),
        supergroup: DEFAULT_SUPERGROUP.into(),
        time_ms: now_ms(),
    }
}

pub fn open_store(kind: StoreKind, dir: &std::path::Path) -> anyhow::Result<Arc<dyn Store>> {
    Ok(match kind {
        StoreKind::Memory => Arc::new(MemStore::new()),
        StoreKind::Rocksdb => {
            Arc::new(RocksStore::open(dir, &RocksStoreOptions::default()).context("open RocksDB store")?)
        }
    })
}

impl Bench {
    pub async fn engine(kind: StoreKind, mode: ExecMode) -> anyhow::Result<Bench> {
        let dir = tempfile::tempdir()?;
        let store = open_store(kind, dir.path())?;
        let engine =
            Engine::open(store, &bench_format_info(), mode).map_err(|e| anyhow::anyhow!("open engine: {e}"))?;
        Ok(Bench {
            target: Target::Engine(Arc::new(engine)),
            call_ids: AtomicU64::new(1),
            _dir: Some(dir),
        })
    }

    pub async fn raft(kind: StoreKind, mode: ExecMode, max_ops_per_entry: usize) -> anyhow::Result<Bench> {
        let dir = tempfile::tempdir()?;
        let member =
            raftfs_metaserver::testkit::single_member_with(dir.path(), kind, mode, BENCH_USER, max_ops_per_entry)
                .await
                .map_err(|e| anyhow::anyhow!("start member: {e}"))?;
        Ok(Bench {
            target: Target::Raft(Arc::new(member)),
            call_ids: AtomicU64::new(1),
            _dir: Some(dir),
        })
    }

    pub fn remote(
        fs: &str,
        tls: raftfs_client::ClientTls,
        user: Option<&str>,
        follower_reads: raftfs_client::FollowerReads,
    ) -> anyhow::Result<Bench> {
        let identity = raftfs_client::Identity::resolve(user);
        let opts = raftfs_client::ClientOptions {
            follower_reads,
            tls,
            ..raftfs_client::ClientOptions::default()
        };
        let fs = FileSystem::connect(fs, identity, opts)?;
        Ok(Bench {
            target: Target::Remote(Arc::new(fs)),
            call_ids: AtomicU64::new(1),
            _dir: None,
        })
    }

    /// The engine's (batches committed, writes they held), at engine level.
    pub fn engine_batch_stats(&self) -> Option<(u64, u64)> {
        match &self.target {
            Target::Engine(e) => Some(e.batch_stats()),
            _ => None,
        }
    }

    /// The remote nameservice's client (grpc level).
    pub fn remote_fs(&self) -> Option<&FileSystem> {
        match &self.target {
            Target::Remote(fs) => Some(fs),
            _ => None,
        }
    }

    /// The in-process member (raft level).
    pub fn member(&self) -> Option<&Arc<Member>> {
        match &self.target {
            Target::Raft(m) => Some(m),
            _ => None,
        }
    }

    /// The last log index of the in-process member (raft level).
    pub fn raft_log_index(&self) -> Option<u64> {
        match &self.target {
            Target::Raft(m) => {
                use openraft::async_runtime::WatchReceiver;
                m.raft.metrics().borrow_watched().last_log_index
            }
            _ => None,
        }
    }

    pub fn is_engine(&self) -> bool {
        matches!(self.target, Target::Engine(_))
    }

    /// The identity a worker calls with (its call id is set per call).
    pub fn worker_ctx(&self, worker: usize) -> CallCtx {
        CallCtx {
            client_id: format!("bench-worker-{worker}"),
            call_id: 0,
            user: BENCH_USER.into(),
            groups: vec![BENCH_USER.into()],
            routed_by: 0,
        }
    }

    fn ctx(&self, worker: usize) -> CallCtx {
        let mut ctx = self.worker_ctx(worker);
        ctx.call_id = self.call_ids.fetch_add(1, Ordering::Relaxed);
        ctx
    }

    /// Blocking call, for engine workers on their own threads. The worker
    /// keeps its `ctx` (from [`Bench::worker_ctx`]) across calls, as a
    /// client keeps its identity; each call gets the next call id.
    pub fn call_sync(&self, ctx: &mut CallCtx, op: Op) -> Result<OpResult, FsError> {
        ctx.call_id = self.call_ids.fetch_add(1, Ordering::Relaxed);
        match &self.target {
            Target::Engine(e) => e.execute(ctx, &op, now_ms()),
            _ => Err(FsError::Internal("call_sync on an async target".into())),
        }
    }

    pub async fn call(&self, worker: usize, op: Op) -> Result<OpResult, FsError> {
        match &self.target {
            Target::Engine(e) => e.execute(&self.ctx(worker), &op, now_ms()),
            Target::Raft(m) => m.call(self.ctx(worker), op).await,
            Target::Remote(fs) => fs.call(op).await,
        }
    }

    pub async fn shutdown(&self) {
        if let Target::Raft(m) = &self.target {
            m.shutdown().await;
        }
    }
}

/// One timed operation's work: the ops making it up (create = create + complete).
pub type Work = Vec<Op>;

/// `inputs` split over `threads` workers as Hadoop's NNThroughputBenchmark
/// splits its generated names: each worker gets a contiguous run, the
/// first `len % threads` workers one more. Consecutive names share a
/// directory, so workers mostly create in directories of their own, as in
/// Hadoop; a round-robin split put every worker in every directory at once
/// (and measured lock waits on each new directory the benchmark does not
/// have).
pub fn split_contiguous(inputs: Vec<Work>, threads: usize) -> Vec<Vec<Work>> {
    let threads = threads.max(1);
    let (each, extra) = (inputs.len() / threads, inputs.len() % threads);
    let mut rest = inputs.into_iter();
    (0..threads)
        .map(|t| rest.by_ref().take(each + usize::from(t < extra)).collect())
        .collect()
}

/// Run `inputs` split over `threads` workers ([`split_contiguous`]);
/// return (elapsed ms, summed per-op latency ms).
pub async fn run_parallel(bench: &Arc<Bench>, threads: usize, inputs: Vec<Work>) -> anyhow::Result<(f64, f64)> {
    let threads = threads.max(1);
    let shares = split_contiguous(inputs, threads);
    let start = Instant::now();
    let mut total_latency = 0.0;
    if bench.is_engine() {
        let handles: Vec<_> = shares
            .into_iter()
            .enumerate()
            .map(|(worker, share)| {
                let b = bench.clone();
                std::thread::spawn(move || -> Result<f64, FsError> {
                    let mut lat = 0.0;
                    let mut ctx = b.worker_ctx(worker);
                    for work in share {
                        let t = Instant::now();
                        for op in work {
                            b.call_sync(&mut ctx, op)?;
                        }
                        lat += t.elapsed().as_secs_f64() * 1000.0;
                    }
                    Ok(lat)
                })
            })
            .collect();
        for h in handles {
            total_latency += h.join().map_err(|_| anyhow::anyhow!("benchmark worker panicked"))??;
        }
    } else {
        let mut set = tokio::task::JoinSet::new();
        for (worker, share) in shares.into_iter().enumerate() {
            let b = bench.clone();
            set.spawn(async move {
                let mut lat = 0.0;
                for work in share {
                    let t = Instant::now();
                    for op in work {
                        b.call(worker, op).await?;
                    }
                    lat += t.elapsed().as_secs_f64() * 1000.0;
                }
                Ok::<f64, FsError>(lat)
            });
        }
        while let Some(r) = set.join_next().await {
            total_latency += r.context("benchmark worker")??;
        }
    }
    Ok((start.elapsed().as_secs_f64() * 1000.0, total_latency))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(n: usize) -> Vec<Work> {
        (0..n)
            .map(|i| vec![Op::GetFileInfo { path: format!("/f{i}") }])
            .collect()
    }

    fn paths(share: &[Work]) -> Vec<String> {
        share
            .iter()
            .map(|w| match &w[0] {
                Op::GetFileInfo { path } => path.clone(),
                o => panic!("unexpected {o:?}"),
            })
            .collect()
    }

    #[test]
    fn inputs_are_split_in_contiguous_runs_as_hadoop_does() {
        let shares = split_contiguous(named(10), 3);
        assert_eq!(paths(&shares[0]), ["/f0", "/f1", "/f2", "/f3"]);
        assert_eq!(paths(&shares[1]), ["/f4", "/f5", "/f6"]);
        assert_eq!(paths(&shares[2]), ["/f7", "/f8", "/f9"]);
        assert_eq!(
            split_contiguous(named(2), 4).iter().map(Vec::len).collect::<Vec<_>>(),
            [1, 1, 0, 0]
        );
        assert_eq!(split_contiguous(named(5), 0).len(), 1, "at least one worker");
    }
}
