//! `raftfs bench audit`: what the audit log costs the create rate.
//!
//! Two nameservices of one member each on this machine, one writing its
//! audit log (the default) and one with `--audit-log off`; rounds of
//! creates alternate between them, so the machine's noise falls on both
//! alike. Prints each round, the medians of the rates and the median of
//! the rounds' on/off ratios, which is the figure: the audit log
//! on costing at most 5% of create throughput.

use anyhow::bail;
use clap::Args;
use raftfs_client::{FileSystem, Identity};

use crate::federation::{creates, median, throughput};
use crate::localns::LocalNameservice;

/// The figure the issue sets: the audit log on keeps this share of the create rate.
const TARGET_ON_OVER_OFF: f64 = 0.95;
const SUPERUSER: &str = "hdfs";

#[derive(Args, Debug, Clone)]
pub struct AuditArgs {
    /// Files created per round.
    #[arg(long, default_value_t = 20_000)]
    pub creates: usize,
    /// Concurrent callers.
    #[arg(long, default_value_t = 32)]
    pub clients: usize,
    /// Rounds of each configuration (the medians are over these). One
    /// round's ratio swings by 10-20% on a shared machine; the median of
    /// 21 is steady within a few percent.
    #[arg(long, default_value_t = 21)]
    pub runs: usize,
    /// memory or rocksdb.
    #[arg(long, default_value = "rocksdb")]
    pub store: String,
    /// Where the auditing member writes its audit log (default: its
    /// directory, on the disk of its Raft log; another disk, as HDFS
    /// operators give hdfs-audit.log, keeps its writes out of the log's
    /// fsyncs).
    #[arg(long = "audit-log")]
    pub audit_log: Option<String>,
}

pub async fn run(a: AuditArgs) -> anyhow::Result<()> {
    if a.runs == 0 || a.creates == 0 || a.clients == 0 {
        bail!("--runs, --creates and --clients must be positive");
    }
    let on_args = match &a.audit_log {
        Some(path) if path.split_whitespace().count() == 1 => format!("--audit-log {path}"),
        Some(path) => bail!("--audit-log {path:?}: a path without spaces"),
        None => String::new(),
    };
    let mut on = LocalNameservice::format(1, &a.store, &on_args, SUPERUSER)?;
    let mut off = LocalNameservice::format(1, &a.store, "--audit-log off", SUPERUSER)?;
    on.start_all()?;
    off.start_all()?;
    on.settled_leader().await?;
    off.settled_leader().await?;
    let me = Identity::new(SUPERUSER, &[]);
    let fs_on = FileSystem::connect(&on.fs_uri(), me.clone(), on.client_options())?;
    let fs_off = FileSystem::connect(&off.fs_uri(), me, off.client_options())?;
    println!(
        "audit bench: create, 1 member ({} store), {} callers, {} files per round, {} rounds; audit log in {}",
        a.store,
        a.clients,
        a.creates,
        a.runs,
        a.audit_log.as_deref().unwrap_or("the member's directory")
    );
    let (mut rates_on, mut rates_off) = (Vec::new(), Vec::new());
    for r in 0..a.runs {
        let dir = format!("/bench/round{r}");
        // Alternate which goes first, so neither always runs on a warmer machine.
        let (x, y) = if r % 2 == 0 {
            let x = throughput(&fs_on, creates(&dir, a.creates), a.clients).await?;
            (x, throughput(&fs_off, creates(&dir, a.creates), a.clients).await?)
        } else {
            let y = throughput(&fs_off, creates(&dir, a.creates), a.clients).await?;
            (throughput(&fs_on, creates(&dir, a.creates), a.clients).await?, y)
        };
        println!(
            "round {}: create with the audit log {x:.0}/s, without {y:.0}/s ({:.3}x)",
            r + 1,
            x / y
        );
        rates_on.push(x);
        rates_off.push(y);
    }
    // The figure: the median of the rounds' ratios. Each round's pair ran
    // back to back, so a slower stretch of the shared machine (or the
    // store growing round by round) falls on both sides of one ratio.
    let mut ratios: Vec<f64> = rates_on.iter().zip(&rates_off).map(|(x, y)| x / y).collect();
    let ratio = median(&mut ratios);
    let (x, y) = (median(&mut rates_on), median(&mut rates_off));
    let met = ratio >= TARGET_ON_OVER_OFF;
    println!("medians over {} rounds:", a.runs);
    println!("  create: audit log on {x:.0} ops/s, off {y:.0} ops/s");
    println!(
        "  on/off, the median of the rounds' ratios: {ratio:.3}x (target >= {TARGET_ON_OVER_OFF}: {})",
        if met { "met" } else { "NOT met" }
    );
    Ok(())
}
