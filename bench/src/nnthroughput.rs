//! `raftfs bench nnthroughput`: NNThroughputBenchmark's ops and output.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::bail;
use clap::Args;

use raftfs_client::{FileSystem, FollowerReads};
use raftfs_metaserver::exec::ExecMode;
use raftfs_metaserver::server::cpu::process_cpu_time_us;
use raftfs_metaserver::server::StoreKind;
use raftfs_proto::{Op, Permission};

use crate::names::Names;
use crate::target::{run_parallel, Bench, Work};

#[derive(Args, Debug, Clone)]
pub struct NnArgs {
    /// create | mkdirs | open | fileStatus | rename | delete | clean | all
    #[arg(long, default_value = "all")]
    pub op: String,
    /// Concurrent callers (threads at engine level, tasks otherwise).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Files per op (creates, stats, renames, deletes, opens).
    #[arg(long, default_value_t = 10_000)]
    pub files: u64,
    /// Directories for mkdirs (default: --files).
    #[arg(long)]
    pub dirs: Option<u64>,
    #[arg(long = "filesPerDir", alias = "files-per-dir", default_value_t = 4)]
    pub files_per_dir: u64,
    #[arg(long = "dirsPerDir", alias = "dirs-per-dir", default_value_t = 2)]
    pub dirs_per_dir: u64,
    /// Leave the benchmark's files behind.
    #[arg(long = "keepResults", alias = "keep-results")]
    pub keep_results: bool,
    /// open/fileStatus: read the files an earlier `-op create -keepResults`
    /// (same --base, -files, -filesPerDir) left, instead of creating them first.
    #[arg(long = "useExisting", alias = "use-existing")]
    pub use_existing: bool,
    /// engine (namespace alone) or raft (single member in-process, log fsynced).
    #[arg(long, default_value = "engine")]
    pub level: String,
    /// memory or rocksdb, for --level engine|raft.
    #[arg(long, default_value = "rocksdb")]
    pub store: String,
    /// leader (plan on the leader under fine-grained locks, log deltas) or
    /// apply (log ops, every replica plans them), for --level engine|raft.
    #[arg(long, default_value = "leader")]
    pub exec: String,
    /// Benchmark a running nameservice over gRPC instead (raftfs://host:port,...).
    #[arg(long)]
    pub fs: Option<String>,
    /// User for --fs (default: the OS user; must be allowed to write --base).
    #[arg(long)]
    pub user: Option<String>,
    /// Repeat each op this many times and report the median.
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    #[arg(long, default_value = "/nnThroughputBenchmark")]
    pub base: String,
    /// --fs: where reads go, one run per mode in this order: leader, followers
    /// (read-your-writes), followers-linearizable (e.g. "leader,followers").
    #[arg(long = "read-from", default_value = "leader")]
    pub read_from: String,
    /// --level raft: most client ops per log entry (1 = one entry per op).
    #[arg(long = "max-ops-per-entry", default_value_t = raftfs_metaserver::exec::batcher::MAX_OPS_PER_ENTRY)]
    pub max_ops_per_entry: usize,
}

const OPS: [&str; 6] = ["create", "mkdirs", "open", "fileStatus", "rename", "delete"];

pub(crate) fn create_work(path: String) -> Work {
    vec![
        Op::Create {
            path: path.clone(),
            permission: Permission(0o644),
            overwrite: true,
            create_parent: true,
            replication: 3,
            block_size: 128 * 1024 * 1024,
        },
        Op::Complete { path, last: None },
    ]
}

pub async fn run(a: NnArgs) -> anyhow::Result<()> {
    let store: StoreKind = a.store.parse().map_err(anyhow::Error::msg)?;
    let exec: ExecMode = a.exec.parse().map_err(anyhow::Error::msg)?;
    let ops: Vec<&str> = if a.op == "all" {
        OPS.to_vec()
    } else {
        vec![a.op.as_str()]
    };
    for op in &ops {
        if !OPS.contains(op) && *op != "clean" {
            bail!("unknown op {op:?}: expected one of {OPS:?}, clean or all");
        }
    }
    let modes: Vec<FollowerReads> = a
        .read_from
        .split(',')
        .map(|m| m.trim().parse().map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<_>>()?;
    if a.fs.is_none() && modes != [FollowerReads::Off] {
        bail!("--read-from is for --fs (a running nameservice)");
    }
    let mut medians: Vec<(FollowerReads, f64)> = Vec::new();
    for mode in &modes {
        let bench = Arc::new(match (&a.fs, a.level.as_str()) {
            (Some(fs), _) => Bench::remote(fs, raftfs_client::ClientTls::FromEnv, a.user.as_deref(), *mode)?,
            (None, "engine") => Bench::engine(store, exec).await?,
            (None, "raft") => Bench::raft(store, exec, a.max_ops_per_entry).await?,
            (None, other) => bail!("--level must be engine or raft, not {other:?}"),
        });
        let where_ = match &a.fs {
            Some(fs) => format!("remote {fs} read-from={mode:?}"),
            None if a.level == "raft" => {
                format!(
                    "level=raft store={} exec={exec} max-ops-per-entry={}",
                    a.store, a.max_ops_per_entry
                )
            }
            None => format!("level={} store={} exec={exec}", a.level, a.store),
        };
        println!("# raftfs nnthroughput, {where_}");
        for op in &ops {
            let before = match bench.remote_fs() {
                Some(fs) => Some(member_stats(fs).await),
                None => None,
            };
            let mut rates = Vec::new();
            for _ in 0..a.runs.max(1) {
                rates.push(run_op(&bench, &a, op).await?);
            }
            let mut sorted = rates.clone();
            sorted.sort_by(f64::total_cmp);
            let median = sorted[sorted.len() / 2];
            if rates.len() > 1 {
                let all: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
                println!(
                    "--- {op} summary ---\nmedian Ops per sec: {median:.0} (runs: {})",
                    all.join(", ")
                );
            }
            if let (Some(fs), Some(before), true) = (bench.remote_fs(), before, matches!(*op, "open" | "fileStatus")) {
                let after = member_stats(fs).await;
                let (mut leader, mut total) = (0u64, 0u64);
                for (addr, m) in &after {
                    let d = m.reads.saturating_sub(before.get(addr).map_or(0, |b| b.reads));
                    total += d;
                    if m.role == "LEADER" {
                        leader += d;
                    }
                }
                println!(
                    "reads served: {total}, by the leader {leader} ({:.0}%)",
                    100.0 * leader as f64 / total.max(1) as f64
                );
                medians.push((*mode, median));
            }
        }
        bench.shutdown().await;
    }
    if let Some((_, base)) = medians.iter().find(|(m, _)| *m == FollowerReads::Off) {
        for (m, r) in &medians {
            if *m != FollowerReads::Off {
                println!("read throughput {m:?} / leader-only: {:.2}", r / base);
            }
        }
    }
    Ok(())
}

/// The leader's last log index, from the members of `fs` that answer.
pub(crate) async fn leader_log_index(fs: &FileSystem) -> Option<u64> {
    member_stats(fs)
        .await
        .values()
        .find(|m| m.role == "LEADER")
        .map(|m| m.last_log)
}

/// What each member of `fs` that answers reports of itself, by address.
async fn member_stats(fs: &FileSystem) -> BTreeMap<String, MemberStat> {
    let mut out = BTreeMap::new();
    for addr in fs.members() {
        if let Ok(i) = fs.member_info(addr).await {
            out.insert(
                addr.clone(),
                MemberStat {
                    role: i.role,
                    reads: i.reads_served,
                    cpu_us: i.cpu_time_us,
                    last_log: i.last_log_index,
                },
            );
        }
    }
    out
}

/// What a member reported of itself.
struct MemberStat {
    role: String,
    /// Reads served since it started.
    reads: u64,
    /// Process CPU time since it started, µs.
    cpu_us: u64,
    last_log: u64,
}

/// CPU time per op of one timed run, by process (µs).
#[derive(Debug, Clone, Default)]
pub(crate) struct CpuSplit {
    /// Every process together: this one (the callers, and at engine and
    /// raft level the namespace too) and every member that answered.
    pub total: f64,
    pub client: f64,
    pub leader: Option<f64>,
    pub followers: Vec<f64>,
}

/// CPU time before a timed run: this process's, and each member's (`--fs`).
pub(crate) struct CpuMark {
    own_us: Option<u64>,
    members: BTreeMap<String, MemberStat>,
}

impl CpuMark {
    /// CPU time spent since `self`, divided by `ops`.
    pub(crate) async fn split(&self, fs: Option<&FileSystem>, ops: u64) -> Option<CpuSplit> {
        let client = process_cpu_time_us()?.checked_sub(self.own_us?)? as f64 / ops.max(1) as f64;
        let mut s = CpuSplit {
            total: client,
            client,
            ..CpuSplit::default()
        };
        if let Some(fs) = fs {
            for (addr, a) in &member_stats(fs).await {
                let Some(b) = self.members.get(addr) else { continue };
                let per_op = a.cpu_us.saturating_sub(b.cpu_us) as f64 / ops.max(1) as f64;
                s.total += per_op;
                if a.role == "LEADER" {
                    s.leader = Some(per_op);
                } else {
                    s.followers.push(per_op);
                }
            }
        }
        Some(s)
    }

    pub(crate) async fn take(fs: Option<&FileSystem>) -> CpuMark {
        let members = match fs {
            Some(fs) => member_stats(fs).await,
            None => BTreeMap::new(),
        };
        CpuMark {
            own_us: process_cpu_time_us(),
            members,
        }
    }

    /// The "# CPU per op" line: CPU time spent since `self` divided by `ops`.
    async fn report(&self, fs: Option<&FileSystem>, ops: u64) -> Option<String> {
        let s = self.split(fs, ops).await?;
        let Some(fs) = fs else {
            return Some(format!(
                "# CPU per op: {:.1} µs (this process: namespace and callers)",
                s.client
            ));
        };
        let followers: Vec<String> = s.followers.iter().map(|f| format!("{f:.1}")).collect();
        Some(format!(
            "# CPU per op (µs): leader {}, followers {}, client {:.1}, total {:.1} ({} of {} members answered)",
            s.leader.map_or("-".into(), |l| format!("{l:.1}")),
            if followers.is_empty() {
                "-".into()
            } else {
                followers.join(" + ")
            },
            s.client,
            s.total,
            followers.len() + usize::from(s.leader.is_some()),
            fs.members().len(),
        ))
    }
}

async fn run_op(bench: &Arc<Bench>, a: &NnArgs, op: &str) -> anyhow::Result<f64> {
    let reads_existing = a.use_existing && matches!(op, "open" | "fileStatus");
    let dir = if reads_existing {
        format!("{}/create", a.base.trim_end_matches('/'))
    } else {
        format!("{}/{op}", a.base.trim_end_matches('/'))
    };
    let files = if op == "mkdirs" {
        a.dirs.unwrap_or(a.files)
    } else {
        a.files
    };
    let per_dir = if op == "mkdirs" {
        a.dirs_per_dir
    } else {
        a.files_per_dir
    };
    let names = Names::new(&dir, files, per_dir);
    let paths: Vec<String> = (0..files).map(|n| names.file(n)).collect();
    if matches!(op, "open" | "fileStatus" | "rename" | "delete") && !reads_existing {
        run_parallel(bench, a.threads, paths.iter().cloned().map(create_work).collect()).await?;
    }
    if reads_existing {
        // A missing path is a successful getFileInfo (null status): check
        // the files are there rather than time lookups of nothing.
        for p in [paths.first(), paths.last()].into_iter().flatten() {
            let r = bench.call(0, Op::GetFileInfo { path: p.clone() }).await?;
            if !matches!(r, raftfs_proto::OpResult::Status(Some(_))) {
                bail!(
                    "-useExisting: {p} does not exist; run -op create -keepResults with the same --base, -files and -filesPerDir first"
                );
            }
        }
    }
    let inputs: Vec<Work> = match op {
        "create" => paths.iter().cloned().map(create_work).collect(),
        "mkdirs" => paths
            .iter()
            .map(|p| {
                vec![Op::Mkdirs {
                    path: p.clone(),
                    permission: Permission(0o755),
                    create_parent: true,
                }]
            })
            .collect(),
        // getBlockLocations arrives with the data path; until then open is the
        // metadata lookup it starts with.
        "open" | "fileStatus" => paths
            .iter()
            .map(|p| vec![Op::GetFileInfo { path: p.clone() }])
            .collect(),
        "rename" => paths
            .iter()
            .map(|p| {
                vec![Op::Rename {
                    src: p.clone(),
                    dst: format!("{p}.r"),
                }]
            })
            .collect(),
        "delete" => paths
            .iter()
            .map(|p| {
                vec![Op::Delete {
                    path: p.clone(),
                    recursive: false,
                }]
            })
            .collect(),
        "clean" => vec![vec![Op::Delete {
            path: a.base.clone(),
            recursive: true,
        }]],
        _ => unreachable!("ops are checked by run"),
    };
    let n = inputs.len() as u64;
    let threads = if op == "clean" { 1 } else { a.threads };
    let batches_before = bench.engine_batch_stats();
    let cpu = CpuMark::take(bench.remote_fs()).await;
    let (elapsed_ms, latency_ms) = run_parallel(bench, threads, inputs).await?;
    let cpu_line = cpu.report(bench.remote_fs(), n).await;
    let batches = bench
        .engine_batch_stats()
        .zip(batches_before)
        .map(|((b, w), (b0, w0))| (b - b0, w - w0));
    let rate = n as f64 / (elapsed_ms / 1000.0);
    println!("--- {op} inputs ---");
    if op == "mkdirs" {
        println!("nrDirs = {n}\nnrThreads = {threads}\nnrDirsPerDir = {per_dir}");
    } else {
        println!("nrFiles = {n}\nnrThreads = {threads}\nnrFilesPerDir = {per_dir}");
    }
    println!("--- {op} stats  ---");
    println!("# operations: {n}");
    println!("Elapsed Time: {}", elapsed_ms.round() as u64);
    println!(" Ops per sec: {rate}");
    println!("Average Time: {}", (latency_ms / n.max(1) as f64).round() as u64);
    if let Some(line) = cpu_line {
        println!("{line}");
    }
    if let Some((b, w)) = batches.filter(|(b, _)| *b > 0) {
        println!(
            "# engine writes per commit: {:.2} ({w} writes, {b} commits)",
            w as f64 / b as f64
        );
    }
    if !a.keep_results && op != "clean" && !reads_existing {
        run_parallel(
            bench,
            1,
            vec![vec![Op::Delete {
                path: dir,
                recursive: true,
            }]],
        )
        .await?;
    }
    Ok(rate)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: NnArgs,
    }

    fn args(extra: &[&str]) -> NnArgs {
        let base = ["nn", "--store", "memory", "--files", "40", "--threads", "2"];
        Cli::parse_from(base.iter().chain(extra)).args
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn use_existing_reads_the_files_a_kept_create_left_and_fails_without_them() {
        let bench = Arc::new(
            Bench::engine(StoreKind::Memory, ExecMode::default())
                .await
                .expect("engine"),
        );
        let a = args(&["--keepResults", "--useExisting"]);
        run_op(&bench, &a, "create").await.expect("create, kept");
        run_op(&bench, &a, "fileStatus").await.expect("stat the kept files");
        // They are still there: -useExisting does not delete what it read.
        run_op(&bench, &a, "open").await.expect("open the kept files");

        let fresh = Arc::new(
            Bench::engine(StoreKind::Memory, ExecMode::default())
                .await
                .expect("engine"),
        );
        let e = run_op(&fresh, &a, "fileStatus")
            .await
            .expect_err("with nothing created, -useExisting has nothing to read");
        assert!(e.to_string().contains("does not exist"), "{e:#}");
        // Without the flag the op creates its own files first.
        run_op(&fresh, &args(&[]), "fileStatus").await.expect("fileStatus");
    }

    #[tokio::test]
    async fn cpu_line_divides_this_process_cpu_time_by_the_ops() {
        let mark = CpuMark::take(None).await;
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let line = mark.report(None, 10).await.expect("getrusage works here");
        let us: f64 = line
            .strip_prefix("# CPU per op: ")
            .and_then(|r| r.split(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("unexpected line {line:?}"));
        // ~20 ms of spinning over 10 ops: ~2000 µs each (less if the core
        // was taken away; never nothing).
        assert!(us >= 100.0, "{line}");
    }
}
