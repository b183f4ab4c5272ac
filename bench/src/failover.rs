//! `raftfs bench failover`: how long a nameservice is unavailable for writes
//! when its leader is killed (kill -9), with the metaserver's default Raft
//! timings unless told otherwise.
//!
//! Starts `--members` metaserver processes of this binary on free local
//! ports, keeps `--clients` writers busy, then per run: kill -9 the leader,
//! and time a fresh client's first write from the kill to its
//! acknowledgement (what HDFS calls the failover time: ZooKeeper session
//! timeout plus fencing there). The killed member is restarted and caught
//! up before the next run. Prints every run and the median; fails if any
//! writer saw an error (the SDK must ride through).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;

use crate::localns::LocalNameservice;
use raftfs_client::{FileSystem, Identity};

/// How long the writers run before each kill.
const WARMUP_MS: u64 = 1000;

#[derive(Args, Debug, Clone)]
pub struct FailoverArgs {
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    #[arg(long, default_value_t = 3)]
    pub members: u64,
    /// Concurrent writers kept busy through the failovers.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    #[arg(long, default_value = "rocksdb")]
    pub store: String,
    /// Extra metaserver flags, e.g. "--election-timeout-min-ms 300 --election-timeout-max-ms 600".
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub metaserver_args: String,
}

pub async fn run(a: FailoverArgs) -> anyhow::Result<()> {
    let mut ns = LocalNameservice::format(a.members, &a.store, &a.metaserver_args, "bench")?;
    ns.start_all()?;
    let fs_uri = ns.fs_uri();
    let identity = Identity::new("bench", &["bench"]);
    let fs = Arc::new(FileSystem::connect(&fs_uri, identity.clone(), ns.client_options())?);
    ns.settled_leader().await?;
    fs.mkdirs("/failover", None).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicU64::new(0));
    let mut writers = Vec::new();
    for w in 0..a.clients {
        let (fs, stop, acked) = (fs.clone(), stop.clone(), acked.clone());
        writers.push(tokio::spawn(async move {
            let mut errors = 0u64;
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                match fs.create(&format!("/failover/w{w}-{n}"), false).await {
                    Ok(_) => {
                        acked.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        eprintln!("writer {w}: {e}");
                        errors += 1;
                    }
                }
                n += 1;
            }
            errors
        }));
    }
    println!(
        "# raftfs failover: {} members, store={}, {} writers, metaserver args [{}]",
        a.members, a.store, a.clients, a.metaserver_args
    );
    let mut times = Vec::new();
    for run in 1..=a.runs {
        let leader = ns.settled_leader().await?;
        tokio::time::sleep(Duration::from_millis(WARMUP_MS)).await;
        ns.kill(leader)?;
        let killed_at = Instant::now();
        let probe = FileSystem::connect(&fs_uri, identity.clone(), ns.client_options())?;
        probe.create(&format!("/failover/probe-{run}"), false).await?;
        let ms = killed_at.elapsed().as_secs_f64() * 1000.0;
        println!("run {run}: leader {leader} killed -> first write acknowledged in {ms:.0} ms");
        times.push(ms);
        ns.start(leader)?;
    }
    stop.store(true, Ordering::Relaxed);
    let mut errors = 0;
    for w in writers {
        errors += w.await?;
    }
    ns.kill_all();
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "failover median: {median:.0} ms (min {:.0}, max {:.0}); writes acknowledged: {}; writer errors: {errors}",
        times[0],
        times[times.len() - 1],
        acked.load(Ordering::Relaxed)
    );
    if errors > 0 {
        bail!("{errors} writer calls failed during failover");
    }
    Ok(())
}
