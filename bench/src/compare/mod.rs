//! `raftfs bench compare`: the benchmarkers' command. One invocation runs
//! the matrix {memory, rocksdb} × {apply, leader} at one or more levels
//! (engine: the namespace alone on threads; raft: one member in-process
//! with its log fsynced; grpc: a local three-member nameservice of real
//! processes it starts itself) for the chosen ops, and prints one table.
//!
//! Configurations are interleaved: run r measures every configuration
//! once, in an order rotated by r, so a noisy neighbour on a shared machine
//! slows all of them alike rather than one. Each row gives the median, min
//! and max throughput of the runs, CPU µs per op (every process involved:
//! the benchmark's own, and at grpc level each member's, from MemberInfo),
//! and writes per log entry (engine: writes per engine commit). `mixed`
//! creates files in one hot directory while as many callers read files
//! elsewhere, and also reports the reads' p99 latency. `--json` prints the
//! rows for scripts; `--plot FILE.svg` draws them as a grouped bar chart.

mod mixed;
mod plot;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Args;
use serde::Serialize;

use raftfs_client::FollowerReads;
use raftfs_metaserver::exec::batcher::MAX_OPS_PER_ENTRY;
use raftfs_metaserver::exec::ExecMode;
use raftfs_metaserver::server::StoreKind;
use raftfs_proto::{Op, Permission};

use crate::localns::LocalNameservice;
use crate::names::Names;
use crate::nnthroughput::{create_work, leader_log_index, CpuMark};
use crate::target::{run_parallel, Bench, Work, BENCH_USER};

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Levels, comma-separated: engine, raft (one member in-process, fsync
    /// on), grpc (three `raftfs metaserver` processes started here).
    #[arg(long, default_value = "engine,raft,grpc")]
    pub levels: String,
    /// Stores, comma-separated: memory, rocksdb.
    #[arg(long, default_value = "memory,rocksdb")]
    pub stores: String,
    /// Execution modes, comma-separated: apply, leader.
    #[arg(long, default_value = "apply,leader")]
    pub exec: String,
    /// Ops, comma-separated: create (create + complete), mkdirs,
    /// fileStatus, rename, delete, mixed (creates in one hot directory
    /// while as many callers read elsewhere), mixedSpread (the same with
    /// the creates spread over many directories).
    #[arg(long, default_value = "create")]
    pub ops: String,
    /// Runs of every configuration (interleaved).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Files per op and run at engine level.
    #[arg(long = "engine-files", default_value_t = 100_000)]
    pub engine_files: u64,
    /// Files per op and run at raft level.
    #[arg(long = "raft-files", default_value_t = 40_000)]
    pub raft_files: u64,
    /// Files per op and run at grpc level.
    #[arg(long = "grpc-files", default_value_t = 20_000)]
    pub grpc_files: u64,
    /// Threads at engine level.
    #[arg(long = "engine-threads", default_value_t = 2)]
    pub engine_threads: usize,
    /// Concurrent callers at raft and grpc level (mixed: half create, half
    /// read; at engine level mixed runs --engine-threads of each).
    #[arg(long, default_value_t = 64)]
    pub callers: usize,
    #[arg(long = "files-per-dir", default_value_t = 4)]
    pub files_per_dir: u64,
    /// How the grpc level's nameservices talk, comma-separated: tls (mutual
    /// TLS, the default of every cluster), insecure (plaintext); both give
    /// the cost of TLS side by side.
    #[arg(long, default_value = "tls")]
    pub transports: String,
    /// Print the rows as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also draw the medians (with min-max bars) as a grouped bar chart.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

/// Where a configuration runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Level {
    Engine,
    Raft,
    Grpc,
}

impl std::str::FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Level, String> {
        match s {
            "engine" => Ok(Level::Engine),
            "raft" => Ok(Level::Raft),
            "grpc" => Ok(Level::Grpc),
            o => Err(format!("unknown level {o:?}: expected engine, raft or grpc")),
        }
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Level::Engine => "engine",
            Level::Raft => "raft",
            Level::Grpc => "grpc",
        })
    }
}

const OPS: [&str; 7] = [
    "create",
    "mkdirs",
    "fileStatus",
    "rename",
    "delete",
    "mixed",
    "mixedSpread",
];

/// How a grpc-level nameservice and its client talk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    Tls,
    Insecure,
}

impl std::str::FromStr for Transport {
    type Err = String;
    fn from_str(s: &str) -> Result<Transport, String> {
        match s {
            "tls" => Ok(Transport::Tls),
            "insecure" | "plaintext" => Ok(Transport::Insecure),
            o => Err(format!("unknown transport {o:?}: expected tls or insecure")),
        }
    }
}

/// One configuration of the matrix at one level.
#[derive(Debug, Clone, Copy)]
struct Config {
    store: StoreKind,
    mode: ExecMode,
    /// `None` below the grpc level, where nothing crosses a network.
    transport: Option<Transport>,
}

impl Config {
    fn transport_name(&self) -> &'static str {
        match self.transport {
            None => "-",
            Some(Transport::Tls) => "tls",
            Some(Transport::Insecure) => "insecure",
        }
    }
}

/// One measurement.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sample {
    pub rate: f64,
    pub cpu: Option<crate::nnthroughput::CpuSplit>,
    pub writes_per_entry: Option<f64>,
    pub read_p99_ms: Option<f64>,
}

/// One row of the table: a configuration and op over every run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    pub level: Level,
    pub store: String,
    pub exec: String,
    /// grpc level: tls or insecure; "-" below it.
    pub transport: String,
    pub op: String,
    /// Ops (NNThroughputBenchmark's: a create is create + complete) per second, each run.
    pub runs: Vec<f64>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Medians over the runs.
    pub cpu_us_per_op: Option<f64>,
    pub cpu_leader_us_per_op: Option<f64>,
    pub cpu_follower_us_per_op: Option<f64>,
    pub writes_per_entry: Option<f64>,
    pub read_p99_ms: Option<f64>,
}

fn list<T: std::str::FromStr<Err = String>>(s: &str) -> anyhow::Result<Vec<T>> {
    s.split(',')
        .map(|x| x.trim().parse().map_err(anyhow::Error::msg))
        .collect()
}

fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    Some(s[s.len() / 2])
}

/// A configuration's target for one run at `level`.
struct Target {
    bench: Arc<Bench>,
}

pub async fn run(a: CompareArgs) -> anyhow::Result<()> {
    let levels: Vec<Level> = list(&a.levels)?;
    let stores: Vec<StoreKind> = list(&a.stores)?;
    let modes: Vec<ExecMode> = list(&a.exec)?;
    let ops: Vec<String> = a.ops.split(',').map(|o| o.trim().to_string()).collect();
    for op in &ops {
        if !OPS.contains(&op.as_str()) {
            bail!("unknown op {op:?}: expected some of {OPS:?}");
        }
    }
    if a.runs == 0 || a.callers < 2 || a.engine_threads == 0 {
        bail!("--runs, --engine-threads must be at least 1 and --callers at least 2");
    }
    let transports: Vec<Transport> = list(&a.transports)?;
    let configs_at = |level: Level| -> Vec<Config> {
        let ts: Vec<Option<Transport>> = match level {
            Level::Grpc => transports.iter().map(|t| Some(*t)).collect(),
            _ => vec![None],
        };
        stores
            .iter()
            .flat_map(|s| modes.iter().map(move |m| (*s, *m)))
            .flat_map(|(store, mode)| {
                ts.iter().map(move |t| Config {
                    store,
                    mode,
                    transport: *t,
                })
            })
            .collect()
    };
    let mut samples: BTreeMap<(Level, usize, String), Vec<Sample>> = BTreeMap::new();
    for level in &levels {
        let configs = configs_at(*level);
        // grpc: one nameservice per configuration, alive for every run.
        let mut clusters = Vec::new();
        if *level == Level::Grpc {
            for cfg in &configs {
                let insecure = cfg.transport == Some(Transport::Insecure);
                let mut ns = LocalNameservice::format_with(
                    3,
                    store_name(cfg.store),
                    &format!("--exec {}", cfg.mode),
                    BENCH_USER,
                    insecure,
                )?;
                ns.start_all()?;
                ns.settled_leader()
                    .await
                    .context("start a nameservice for the grpc level")?;
                clusters.push(ns);
            }
        }
        for r in 0..a.runs {
            for k in 0..configs.len() {
                let c = (k + r) % configs.len();
                let Config { store, mode, .. } = configs[c];
                let wire = configs[c].transport_name();
                let target = match level {
                    Level::Engine => Target {
                        bench: Arc::new(Bench::engine(store, mode).await?),
                    },
                    Level::Raft => Target {
                        bench: Arc::new(Bench::raft(store, mode, MAX_OPS_PER_ENTRY).await?),
                    },
                    Level::Grpc => Target {
                        bench: Arc::new(Bench::remote(
                            &clusters[c].fs_uri(),
                            clusters[c].client_tls(),
                            Some(BENCH_USER),
                            FollowerReads::Off,
                        )?),
                    },
                };
                for op in &ops {
                    let s = measure(&target, *level, op, r, &a).await.with_context(|| {
                        format!("{level} {} --exec {mode} {wire} {op}, run {}", store_name(store), r + 1)
                    })?;
                    if !a.json {
                        eprintln!(
                            "run {}/{}: {level} {} {mode} {wire} {op}: {:.0} ops/s",
                            r + 1,
                            a.runs,
                            store_name(store),
                            s.rate
                        );
                    }
                    samples.entry((*level, c, op.clone())).or_default().push(s);
                }
                target.bench.shutdown().await;
            }
        }
    }
    let rows: Vec<Row> = samples
        .into_iter()
        .map(|((level, c, op), v)| {
            let rates: Vec<f64> = v.iter().map(|s| s.rate).collect();
            let pick = |f: &dyn Fn(&Sample) -> Option<f64>| median(&v.iter().filter_map(f).collect::<Vec<_>>());
            Row {
                level,
                store: store_name(configs_at(level)[c].store).into(),
                exec: configs_at(level)[c].mode.to_string(),
                transport: configs_at(level)[c].transport_name().into(),
                op,
                median: median(&rates).unwrap_or(0.0),
                min: rates.iter().copied().fold(f64::INFINITY, f64::min),
                max: rates.iter().copied().fold(0.0, f64::max),
                runs: rates,
                cpu_us_per_op: pick(&|s| s.cpu.as_ref().map(|c| c.total)),
                cpu_leader_us_per_op: pick(&|s| s.cpu.as_ref().and_then(|c| c.leader)),
                cpu_follower_us_per_op: pick(&|s| s.cpu.as_ref().and_then(|c| median(&c.followers))),
                writes_per_entry: pick(&|s| s.writes_per_entry),
                read_p99_ms: pick(&|s| s.read_p99_ms),
            }
        })
        .collect();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", table(&rows, a.runs));
    }
    if let Some(path) = &a.plot {
        plot::draw(path, &rows)?;
        if !a.json {
            println!("plot: {}", path.display());
        }
    }
    Ok(())
}

fn store_name(s: StoreKind) -> &'static str {
    match s {
        StoreKind::Memory => "memory",
        StoreKind::Rocksdb => "rocksdb",
    }
}

fn fmt_rate(r: f64) -> String {
    if r >= 10_000.0 {
        format!("{:.1}k", r / 1000.0)
    } else {
        format!("{r:.0}")
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// The table, then each op's leader/apply ratio per level and store.
fn table(rows: &[Row], runs: usize) -> String {
    let mut out = format!(
        "{:<7} {:<8} {:<7} {:<8} {:<11} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>9} {:>9}\n",
        "level",
        "store",
        "exec",
        "wire",
        "op",
        "median/s",
        "min/s",
        "max/s",
        "CPU µs/op",
        "leader µs",
        "follower",
        "wr/entry",
        "rd p99ms"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<7} {:<8} {:<7} {:<8} {:<11} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>9} {:>9}\n",
            r.level.to_string(),
            r.store,
            r.exec,
            r.transport,
            r.op,
            fmt_rate(r.median),
            fmt_rate(r.min),
            fmt_rate(r.max),
            opt(r.cpu_us_per_op, 1),
            opt(r.cpu_leader_us_per_op, 1),
            opt(r.cpu_follower_us_per_op, 1),
            opt(r.writes_per_entry, 2),
            opt(r.read_p99_ms, 2),
        ));
    }
    out.push_str(&format!(
        "(medians of {runs} interleaved runs; a create is create + complete; CPU is every process's, per op)\n"
    ));
    for r in rows.iter().filter(|r| r.exec == "leader") {
        if let Some(base) = rows.iter().find(|b| {
            b.exec == "apply" && b.level == r.level && b.store == r.store && b.op == r.op && b.transport == r.transport
        }) {
            out.push_str(&format!(
                "leader / apply: {} {} {}{}: {:.2}x\n",
                r.level,
                r.store,
                r.op,
                if r.transport == "insecure" { " (insecure)" } else { "" },
                r.median / base.median.max(f64::MIN_POSITIVE)
            ));
        }
    }
    for r in rows.iter().filter(|r| r.op == "mixed") {
        if let Some(spread) = rows.iter().find(|b| {
            b.op == "mixedSpread"
                && b.level == r.level
                && b.store == r.store
                && b.exec == r.exec
                && b.transport == r.transport
        }) {
            out.push_str(&format!(
                "creates in one hot directory / spread: {} {} {}: {:.2}x\n",
                r.level,
                r.store,
                r.exec,
                r.median / spread.median.max(f64::MIN_POSITIVE)
            ));
        }
    }
    for r in rows.iter().filter(|r| r.transport == "tls") {
        if let Some(plain) = rows.iter().find(|b| {
            b.transport == "insecure" && b.level == r.level && b.store == r.store && b.exec == r.exec && b.op == r.op
        }) {
            out.push_str(&format!(
                "tls / insecure: {} {} {} {}: {:.2}x throughput, CPU {} vs {} µs/op\n",
                r.level,
                r.store,
                r.exec,
                r.op,
                r.median / plain.median.max(f64::MIN_POSITIVE),
                opt(r.cpu_us_per_op, 1),
                opt(plain.cpu_us_per_op, 1),
            ));
        }
    }
    out
}

/// Log entries so far (raft and grpc levels).
async fn log_index(t: &Target) -> Option<u64> {
    match t.bench.remote_fs() {
        Some(fs) => leader_log_index(fs).await,
        None => t.bench.raft_log_index(),
    }
}

/// One op of one configuration, once.
async fn measure(t: &Target, level: Level, op: &str, run: usize, a: &CompareArgs) -> anyhow::Result<Sample> {
    let (files, threads) = match level {
        Level::Engine => (a.engine_files, a.engine_threads),
        Level::Raft => (a.raft_files, a.callers),
        Level::Grpc => (a.grpc_files, a.callers),
    };
    let base = format!("/compare/r{run}/{op}");
    if op == "mixed" || op == "mixedSpread" {
        // Engine level: threads, as many creating as reading.
        let callers = match level {
            Level::Engine => 2 * a.engine_threads,
            _ => a.callers,
        };
        let creates = match op {
            "mixed" => mixed::Creates::Hot,
            _ => mixed::Creates::Spread {
                files_per_dir: a.files_per_dir,
            },
        };
        return mixed::run(t.bench.clone(), &base, files, callers, creates).await;
    }
    let names = Names::new(&base, files, a.files_per_dir);
    let paths: Vec<String> = (0..files).map(|n| names.file(n)).collect();
    if matches!(op, "fileStatus" | "rename" | "delete") {
        run_parallel(&t.bench, threads, paths.iter().cloned().map(create_work).collect()).await?;
    }
    let (inputs, writes_per_work): (Vec<Work>, u64) = match op {
        "create" => (paths.iter().cloned().map(create_work).collect(), 2),
        "mkdirs" => (
            paths
                .iter()
                .map(|p| {
                    vec![Op::Mkdirs {
                        path: p.clone(),
                        permission: Permission(0o755),
                        create_parent: true,
                    }]
                })
                .collect(),
            1,
        ),
        "fileStatus" => (
            paths
                .iter()
                .map(|p| vec![Op::GetFileInfo { path: p.clone() }])
                .collect(),
            0,
        ),
        "rename" => (
            paths
                .iter()
                .map(|p| {
                    vec![Op::Rename {
                        src: p.clone(),
                        dst: format!("{p}.r"),
                    }]
                })
                .collect(),
            1,
        ),
        "delete" => (
            paths
                .iter()
                .map(|p| {
                    vec![Op::Delete {
                        path: p.clone(),
                        recursive: false,
                    }]
                })
                .collect(),
            1,
        ),
        _ => unreachable!("ops are checked by run"),
    };
    let n = inputs.len() as u64;
    let batches0 = t.bench.engine_batch_stats();
    let log0 = log_index(t).await;
    let cpu = CpuMark::take(t.bench.remote_fs()).await;
    let (elapsed_ms, _) = run_parallel(&t.bench, threads, inputs).await?;
    let cpu = cpu.split(t.bench.remote_fs(), n).await;
    let writes = n * writes_per_work;
    let writes_per_entry = match (t.bench.engine_batch_stats(), batches0, log0, log_index(t).await) {
        (Some((b, w)), Some((b0, w0)), _, _) => (b > b0).then(|| (w - w0) as f64 / (b - b0) as f64),
        (_, _, Some(l0), Some(l1)) if l1 > l0 && writes > 0 => Some(writes as f64 / (l1 - l0) as f64),
        _ => None,
    };
    Ok(Sample {
        rate: n as f64 / (elapsed_ms / 1000.0),
        cpu,
        writes_per_entry,
        read_p99_ms: None,
    })
}
