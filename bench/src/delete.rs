//! `raftfs bench delete`: a recursive delete of a large subtree on a
//! single-member nameservice in-process (log fsynced), and what it costs
//! the rest of the namespace.
//!
//! It builds a tree of about `--inodes` directories under /bench-delete
//! (with `mkdirs -p` of short chains, five new inodes a call), starts
//! `--readers` callers reading (getFileInfo) files elsewhere, times the
//! delete call, then waits until everything it detached is reclaimed
//! (`--exec leader`; in `--exec apply` the delete is one entry and nothing
//! is left), and reports the readers' latency while that went on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use rand::{Rng, SeedableRng};

use raftfs_metaserver::exec::batcher::MAX_OPS_PER_ENTRY;
use raftfs_metaserver::exec::ExecMode;
use raftfs_metaserver::inode::DETACHED_ID;
use raftfs_metaserver::server::StoreKind;
use raftfs_proto::{FsError, Op, OpResult, Permission};

use crate::nnthroughput::create_work;
use crate::target::{run_parallel, Bench, Work};

/// Inodes each mkdirs of the tree creates (a chain below a new directory).
const CHAIN_INODES: u64 = 5;
/// Files the readers read.
const READER_FILES: u64 = 1000;
/// How long the benchmark waits for the reclaim to finish.
const MAX_RECLAIM_WAIT_SECS: u64 = 3600;

#[derive(Args, Debug, Clone)]
pub struct DeleteArgs {
    /// Inodes in the subtree deleted (about).
    #[arg(long, default_value_t = 1_000_000)]
    pub inodes: u64,
    /// memory or rocksdb.
    #[arg(long, default_value = "rocksdb")]
    pub store: String,
    /// leader or apply.
    #[arg(long, default_value = "leader")]
    pub exec: String,
    /// Callers reading elsewhere during the delete and the reclaim.
    #[arg(long, default_value_t = 8)]
    pub readers: usize,
    /// Callers building the tree.
    #[arg(long, default_value_t = 64)]
    pub builders: usize,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

pub async fn run(a: DeleteArgs) -> anyhow::Result<()> {
    let store: StoreKind = a.store.parse().map_err(anyhow::Error::msg)?;
    let exec: ExecMode = a.exec.parse().map_err(anyhow::Error::msg)?;
    let bench = Arc::new(Bench::raft(store, exec, MAX_OPS_PER_ENTRY).await?);
    println!(
        "# raftfs bench delete: store={} exec={exec} inodes={}",
        a.store, a.inodes
    );

    // The tree: /bench-delete/d<k>/e<j>/x/y/z/w, 1000 e's per d.
    let chains = a.inodes.div_ceil(CHAIN_INODES).max(1);
    let work: Vec<Work> = (0..chains)
        .map(|i| {
            vec![Op::Mkdirs {
                path: format!("/bench-delete/d{}/e{}/x/y/z/w", i / 1000, i % 1000),
                permission: Permission(0o755),
                create_parent: true,
            }]
        })
        .collect();
    let started = Instant::now();
    run_parallel(&bench, a.builders, work).await?;
    let built = started.elapsed();
    let inodes = chains * CHAIN_INODES + chains.div_ceil(1000) + 1;
    println!(
        "built: {inodes} inodes in {:.1} s ({:.0} inodes/s)",
        built.as_secs_f64(),
        inodes as f64 / built.as_secs_f64()
    );
    let readable: Vec<String> = (0..READER_FILES).map(|n| format!("/bench-readers/f{n}")).collect();
    run_parallel(&bench, 8, readable.iter().cloned().map(create_work).collect()).await?;
    let readable = Arc::new(readable);

    // Readers from just before the delete until the reclaim is done.
    let done = Arc::new(AtomicBool::new(false));
    let mut readers = tokio::task::JoinSet::new();
    for r in 0..a.readers {
        let (b, done, readable) = (bench.clone(), done.clone(), readable.clone());
        readers.spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(r as u64);
            let mut lat = Vec::new();
            while !done.load(Ordering::Relaxed) {
                let path = readable[rng.gen_range(0..readable.len())].clone();
                let t = Instant::now();
                match b.call(1000 + r, Op::GetFileInfo { path }).await? {
                    OpResult::Status(Some(_)) => {}
                    other => return Err(FsError::Internal(format!("reader got {other:?}"))),
                }
                lat.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            Ok::<_, FsError>(lat)
        });
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let t = Instant::now();
    let r = bench
        .call(
            0,
            Op::Delete {
                path: "/bench-delete".into(),
                recursive: true,
            },
        )
        .await?;
    let call_ms = t.elapsed().as_secs_f64() * 1000.0;
    anyhow::ensure!(r == OpResult::Bool(true), "delete answered {r:?}");
    println!("delete call: {call_ms:.1} ms");
    let member = bench.member().expect("a raft-level bench has a member");
    let store = member.shared().store.clone();
    let deadline = Instant::now() + Duration::from_secs(MAX_RECLAIM_WAIT_SECS);
    while !store.children(DETACHED_ID, "", 1)?.is_empty() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "reclaim unfinished after {MAX_RECLAIM_WAIT_SECS} s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let reclaim = t.elapsed();
    done.store(true, Ordering::Relaxed);
    let mut lat = Vec::new();
    while let Some(r) = readers.join_next().await {
        lat.extend(r??);
    }
    lat.sort_by(f64::total_cmp);
    let blocks_left = store.blocks_page(None, 1)?.len();
    println!(
        "reclaimed: {inodes} inodes in {:.1} s after the call ({:.0} inodes/s); block rows left: {blocks_left}",
        reclaim.as_secs_f64(),
        inodes as f64 / reclaim.as_secs_f64()
    );
    println!(
        "getFileInfo elsewhere meanwhile: {} calls, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        lat.len(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat.last().copied().unwrap_or(0.0)
    );
    bench.shutdown().await;
    Ok(())
}
