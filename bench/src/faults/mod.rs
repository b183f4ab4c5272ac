//! `raftfs bench faults`: a Jepsen-style fault run against a local
//! nameservice of real processes, and its verdict.
//!
//! Per run (seed `--seed + run - 1`): format and start `--members` member
//! processes with a fault-injecting proxy on every link between them
//! ([`proxy`]) and one between the clients and each member; `--clients`
//! clients call the SDK and record a history ([`workload`]) while the
//! [`nemesis`] injects random faults (sometimes two at once) for
//! `--secs`; then every fault is healed, the clients finish their last
//! call, and a final read of every contended path joins the history.
//! The run passes when
//! * the history is linearizable for the per-path model ([`checker`]),
//!   which also catches acknowledged writes that are lost (the final reads
//!   must see them) and calls applied twice (a retried create answering
//!   "exists", a retried delete answering false);
//! * every acknowledged unique create is present, none answered "exists";
//! * no member exited by itself.
//!
//! A failing run keeps its directory (logs, data, `history.txt`) and prints
//! the seed to replay it with. The members log every read's read index and
//! applied index (`raftfs::reads` at debug, unless `RUST_LOG` says
//! otherwise) and their audit logs every call, so a faulted read can be
//! traced to the member that served it and what it waited for.

pub mod checker;
pub mod nemesis;
pub mod proxy;
pub mod workload;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use rand::rngs::StdRng;
use rand::SeedableRng;

use raftfs_client::{ClientOptions, FileSystem, Identity};

use crate::localns::LocalNameservice;
use checker::{Input, Op};
use nemesis::Nemesis;
use workload::{ClientLog, Workload};

/// The superuser the runs format with and call as (permission checks are not under test here).
const USER: &str = "faults";
/// The directory the clients work in.
const BASE: &str = "/lin";

#[derive(Args, Debug, Clone)]
pub struct FaultArgs {
    /// Seed of the first run; run r uses seed + r - 1. Printed, so a failure can be replayed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 1)]
    pub runs: u64,
    /// Seconds of faults per run.
    #[arg(long, default_value_t = 60)]
    pub secs: u64,
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    #[arg(long, default_value_t = 3)]
    pub members: u64,
    /// Contended paths; fewer means more contention per path.
    #[arg(long, default_value_t = 8)]
    pub keys: usize,
    #[arg(long, default_value = "rocksdb")]
    pub store: String,
    /// Extra metaserver flags.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub metaserver_args: String,
}

/// What one run found.
struct RunReport {
    ops: usize,
    unknown: usize,
    unique_acked: usize,
    lost: Vec<String>,
    twice: Vec<String>,
    failed: Vec<(String, String)>,
    faults: usize,
    violation: Option<String>,
    inconclusive_keys: usize,
    max_ops_per_key: usize,
    check_ms: u128,
}

impl RunReport {
    fn passed(&self) -> bool {
        self.violation.is_none()
            && self.lost.is_empty()
            && self.twice.is_empty()
            && self.failed.is_empty()
            && self.inconclusive_keys == 0
    }
}

pub async fn run(a: FaultArgs) -> anyhow::Result<()> {
    if a.members < 3 {
        bail!("--members must be at least 3 so that one fault leaves a majority");
    }
    if a.keys == 0 || a.clients == 0 {
        bail!("--keys and --clients must be positive");
    }
    println!(
        "# raftfs fault runs: {} x {} s, {} clients, {} members, {} paths, store={}, metaserver args \"{}\", first seed {}",
        a.runs, a.secs, a.clients, a.members, a.keys, a.store, a.metaserver_args, a.seed
    );
    let mut failed_seeds = Vec::new();
    for r in 0..a.runs {
        let seed = a.seed + r;
        println!("run {}/{} seed {seed}", r + 1, a.runs);
        match run_one(&a, seed).await {
            Ok(true) => {}
            Ok(false) => failed_seeds.push(seed),
            Err(e) => {
                println!("  run error: {e:#}");
                failed_seeds.push(seed);
            }
        }
    }
    if !failed_seeds.is_empty() {
        for s in &failed_seeds {
            println!(
                "FAILED seed {s}: replay with raftfs bench faults --seed {s} --runs 1 --secs {} --clients {} --keys {} --members {} --store {} --metaserver-args \"{}\"",
                a.secs, a.clients, a.keys, a.members, a.store, a.metaserver_args
            );
        }
        bail!("{} of {} runs failed", failed_seeds.len(), a.runs);
    }
    println!("all {} runs passed", a.runs);
    Ok(())
}

/// One run; Ok(false) when it ran to the end and found a problem.
async fn run_one(a: &FaultArgs, seed: u64) -> anyhow::Result<bool> {
    let started = Instant::now();
    let ns = LocalNameservice::format(a.members, &a.store, &a.metaserver_args, USER)?;
    let mut nemesis = Nemesis::wire(ns, StdRng::seed_from_u64(seed), started).await?;
    nemesis.ns.start_all()?;
    nemesis.ns.settled_leader().await?;
    let fs_uri = nemesis.ns.fs_uri();
    let identity = Identity::new(USER, &["supergroup"]);
    let tls = nemesis.ns.client_tls();
    let admin = FileSystem::connect(&fs_uri, identity.clone(), nemesis.ns.client_options())?;
    let w = Arc::new(Workload {
        base: BASE.to_string(),
        keys: a.keys,
        started,
    });
    admin
        .mkdirs(&w.unique_dir(), None)
        .await
        .context("make the run's directories")?;

    let stop = Arc::new(AtomicBool::new(false));
    let routes = nemesis.client_routes();
    let mut clients = Vec::new();
    for c in 0..a.clients {
        let client_seed = seed.wrapping_mul(1_000_003).wrapping_add(c as u64);
        clients.push(tokio::spawn(w.clone().client(
            fs_uri.clone(),
            ClientOptions {
                tls: tls.clone(),
                dial_via: routes.clone(),
                ..ClientOptions::default()
            },
            identity.clone(),
            c,
            client_seed,
            stop.clone(),
        )));
    }
    let until = Instant::now() + Duration::from_secs(a.secs);
    let nemesis_result = nemesis.run_until(until).await;
    stop.store(true, Ordering::Relaxed);
    let mut logs: Vec<ClientLog> = Vec::new();
    for c in clients {
        logs.push(c.await.context("client task")??);
    }
    let load_secs = started.elapsed().as_secs_f64();
    if let Err(e) = nemesis_result {
        let dir = keep(nemesis, &[], "");
        bail!("{e:#} (directory kept: {})", dir.display());
    }

    // Final reads, after everything is healed and every call returned.
    nemesis.ns.settled_leader().await?;
    let mut history: Vec<Op> = logs.iter_mut().flat_map(|l| std::mem::take(&mut l.ops)).collect();
    for key in 0..a.keys {
        let call_ns = started.elapsed().as_nanos() as u64;
        let output = workload::call(&admin, &w.key_path(key), &w.key_path(key ^ 1), Input::Stat).await;
        history.push(Op {
            client: a.clients,
            key,
            input: Input::Stat,
            ret_ns: output.as_ref().map(|_| started.elapsed().as_nanos() as u64),
            output,
            call_ns,
        });
    }
    let present: BTreeSet<String> = admin
        .list_status(&w.unique_dir())
        .await
        .context("list the unique creates")?
        .into_iter()
        .map(|s| format!("{}/{}", w.unique_dir(), s.path_suffix))
        .collect();

    let checked = Instant::now();
    let verdict = checker::check(&history, a.keys);
    let check_ms = checked.elapsed().as_millis();
    let unique_acked: Vec<String> = logs.iter().flat_map(|l| l.unique_acked.iter().cloned()).collect();
    let report = RunReport {
        ops: history.len()
            + logs
                .iter()
                .map(|l| l.unique_acked.len() + l.unique_unknown.len())
                .sum::<usize>(),
        unknown: history.iter().filter(|o| o.output.is_none()).count()
            + logs.iter().map(|l| l.unique_unknown.len()).sum::<usize>(),
        unique_acked: unique_acked.len(),
        lost: unique_acked.iter().filter(|p| !present.contains(*p)).cloned().collect(),
        twice: logs.iter().flat_map(|l| l.unique_twice.iter().cloned()).collect(),
        failed: logs.iter().flat_map(|l| l.unique_failed.iter().cloned()).collect(),
        faults: nemesis.done.len(),
        violation: verdict.as_ref().err().map(|v| v.to_string()),
        inconclusive_keys: verdict.as_ref().map_or(0, |s| s.inconclusive_keys),
        max_ops_per_key: (0..a.keys)
            .map(|k| history.iter().filter(|o| o.key == k).count())
            .max()
            .unwrap_or(0),
        check_ms,
    };
    println!(
        "  {} calls in {load_secs:.1} s ({:.0}/s) under {} faults; {} unknown outcomes; {} unique creates acknowledged",
        report.ops,
        report.ops as f64 / load_secs,
        report.faults,
        report.unknown,
        report.unique_acked
    );
    println!(
        "  linearizable: {} ({} paths, at most {} calls per path, checked in {} ms{})",
        if report.violation.is_none() { "yes" } else { "NO" },
        a.keys,
        report.max_ops_per_key,
        report.check_ms,
        if report.inconclusive_keys > 0 {
            format!(", {} paths inconclusive", report.inconclusive_keys)
        } else {
            String::new()
        }
    );
    println!("  {}", nemesis.kinds_report());
    println!(
        "  acknowledged creates lost: {}; applied twice: {}; unexpected errors: {}; snapshots installed: {}",
        report.lost.len(),
        report.twice.len(),
        report.failed.len(),
        nemesis.ns.count_in_logs("snapshot installed")
    );
    if report.passed() {
        return Ok(true);
    }
    let mut detail = String::new();
    if let Some(v) = &report.violation {
        let _ = writeln!(detail, "{v}");
    }
    for p in report.lost.iter().take(20) {
        let _ = writeln!(detail, "lost: {p}");
    }
    for p in report.twice.iter().take(20) {
        let _ = writeln!(detail, "applied twice: {p}");
    }
    for (p, e) in report.failed.iter().take(20) {
        let _ = writeln!(detail, "unexpected error: {p}: {e}");
    }
    print!("{detail}");
    let dir = keep(nemesis, &history, &detail);
    println!("  directory kept (logs, data, history.txt): {}", dir.display());
    Ok(false)
}

/// Keep a failed run's directory, with its history and findings written into it.
fn keep(nemesis: Nemesis, history: &[Op], detail: &str) -> std::path::PathBuf {
    let mut text = String::new();
    for l in &nemesis.done {
        let _ = writeln!(text, "{l}");
    }
    let _ = writeln!(text, "{detail}");
    let mut sorted: Vec<&Op> = history.iter().collect();
    sorted.sort_by_key(|o| o.call_ns);
    for o in sorted {
        let _ = writeln!(text, "{o}");
    }
    let root = nemesis.ns.root().to_path_buf();
    let _ = std::fs::write(root.join("history.txt"), text);
    drop(nemesis.links);
    nemesis.ns.keep()
}
