//! `raftfs bench hadoop-rpc`: getFileInfo and create (create + complete,
//! as NNThroughputBenchmark's create) through Hadoop's own RPC, by
//! `hdfs-native` (a Hadoop client no one here wrote), against the same
//! calls through the raftfs SDK over gRPC; one member serving both, rounds
//! interleaved so the machine's noise falls on both alike.
//!
//! Both clients are what an application has: one client object shared by
//! every concurrent caller (hdfs-native multiplexes its callers' calls on
//! one IPC connection, as Hadoop's Java client does; the SDK on one HTTP/2
//! channel). The figures: Hadoop RPC at least 0.8x the SDK's rate
//! for each call at 64 concurrent callers. Each phase also prints the CPU
//! time per call of this process (the client in use) and of the member, so
//! a gap can be put on the side that costs it.
//!
//! Caveats: one member, so both reach the leader; the member's gRPC port
//! is TLS and its Hadoop port is not (Hadoop's SIMPLE authentication has no
//! encryption), which favours Hadoop RPC by TLS's cost; both clients run in
//! this process, by default on the same two cores as the member, so a
//! client library's CPU slows the member too (`--pin` puts the clients and
//! the member on a core each, as separate machines would).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use raftfs_client::{FileSystem, Identity};
use raftfs_proto::{Op, OpResult, Permission};

use crate::federation::{creates, median, throughput};
use crate::localns::LocalNameservice;
use crate::nnthroughput::CpuMark;
use crate::ports::free_port;

/// The figure the issue sets: Hadoop RPC keeps this share of the SDK's rate.
const TARGET_HADOOP_OVER_SDK: f64 = 0.8;
const SUPERUSER: &str = "hdfs";

#[derive(Args, Debug, Clone)]
pub struct HadoopRpcArgs {
    /// Files stat'ed per round, and files created per round by each side.
    #[arg(long, default_value_t = 20_000)]
    pub files: usize,
    /// Concurrent callers of each client.
    #[arg(long, default_value_t = 64)]
    pub clients: usize,
    /// Rounds of each (the medians are over these).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// memory or rocksdb.
    #[arg(long, default_value = "rocksdb")]
    pub store: String,
    /// Which calls to compare, comma-separated: getfileinfo, create.
    #[arg(long, default_value = "getfileinfo,create", value_delimiter = ',')]
    pub ops: Vec<BenchedCall>,
    /// Passes over the files in each getFileInfo phase (longer phases, for
    /// a profiler to attach to: `--ops getfileinfo --stat-passes 40`).
    #[arg(long, default_value_t = 1)]
    pub stat_passes: usize,
    /// Pin this process (both clients) to CPU 0 and the member to CPU 1,
    /// as if they ran on separate machines: the rates are then bounded by
    /// the member's cost per call, not by the two clients' own CPU, which
    /// on a shared machine the member pays for. Needs two CPUs.
    #[arg(long)]
    pub pin: bool,
}

/// A call `raftfs bench hadoop-rpc` compares.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchedCall {
    #[value(name = "getfileinfo")]
    GetFileInfo,
    #[value(name = "create")]
    Create,
}

/// Run `call` on every index below `n` with `clients` concurrent callers; ops/s.
async fn concurrently<F, Fut>(n: usize, clients: usize, call: F) -> anyhow::Result<f64>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let call = Arc::new(call);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..clients.max(1) {
        let (call, next) = (call.clone(), next.clone());
        set.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok::<(), anyhow::Error>(());
                }
                call(i).await?;
            }
        });
    }
    while let Some(r) = set.join_next().await {
        r??;
    }
    Ok(n as f64 / started.elapsed().as_secs_f64())
}

/// getFileInfo of `/bench/f{i % files}` for every i below `stats`, over Hadoop RPC.
async fn hadoop_stats(
    client: &Arc<hdfs_native::Client>,
    files: usize,
    stats: usize,
    clients: usize,
) -> anyhow::Result<f64> {
    let client = client.clone();
    concurrently(stats, clients, move |i| {
        let client = client.clone();
        let i = i % files;
        async move {
            let st = client.get_file_info(&format!("/bench/f{i}")).await?;
            if st.isdir || st.length != 0 {
                bail!("/bench/f{i}: not the empty file it was made as: {st:?}");
            }
            Ok(())
        }
    })
    .await
}

/// Create and close (complete) `dir/f{i}` for every i below `files`, over Hadoop RPC.
async fn hadoop_creates(
    client: &Arc<hdfs_native::Client>,
    dir: String,
    files: usize,
    clients: usize,
) -> anyhow::Result<f64> {
    let client = client.clone();
    concurrently(files, clients, move |i| {
        let (client, path) = (client.clone(), format!("{dir}/f{i}"));
        async move {
            let opts = hdfs_native::WriteOptions::default()
                .create_parent(true)
                .replication(1)
                .overwrite(false);
            let mut w = client
                .create(&path, opts)
                .await
                .with_context(|| format!("create {path}"))?;
            w.close().await.with_context(|| format!("complete {path}"))?;
            Ok(())
        }
    })
    .await
}

/// Create + complete of `dir/f{i}` through the SDK, as NNThroughputBenchmark's create.
async fn sdk_creates(fs: &FileSystem, dir: &str, files: usize, clients: usize) -> anyhow::Result<f64> {
    let fs = fs.clone();
    let dir = dir.to_string();
    concurrently(files, clients, move |i| {
        let (fs, path) = (fs.clone(), format!("{dir}/f{i}"));
        async move {
            fs.call(Op::Create {
                path: path.clone(),
                permission: Permission::new(0o644),
                overwrite: false,
                create_parent: true,
                replication: 1,
                block_size: raftfs_proto::limits::DEFAULT_BLOCK_SIZE_BYTES,
            })
            .await?;
            match fs
                .call(Op::Complete {
                    path: path.clone(),
                    last: None,
                })
                .await?
            {
                OpResult::Bool(true) => Ok(()),
                other => bail!("complete {path}: {other:?}"),
            }
        }
    })
    .await
}

/// One side's phase of a round: its rate, and the CPU time per call of
/// this process (the client: hdfs-native or the SDK) and of the member.
#[derive(Debug, Clone, Copy)]
struct Sample {
    rate: f64,
    client_us: f64,
    member_us: f64,
}

/// Run `phase` (which makes `calls` calls through either client) and time
/// it: its rate, and CPU per call measured around it (`fs` asks the member).
async fn timed<F>(fs: &FileSystem, calls: usize, phase: F) -> anyhow::Result<Sample>
where
    F: std::future::Future<Output = anyhow::Result<f64>>,
{
    let mark = CpuMark::take(Some(fs)).await;
    let rate = phase.await?;
    let split = mark.split(Some(fs), calls as u64).await;
    Ok(Sample {
        rate,
        client_us: split.as_ref().map_or(f64::NAN, |s| s.client),
        member_us: split.and_then(|s| s.leader).unwrap_or(f64::NAN),
    })
}

/// Both sides' phases of a round, the SDK's first or Hadoop's (the caller
/// alternates, so neither always runs on a warmer machine).
async fn interleaved<S, H>(sdk_first: bool, sdk: S, hadoop: H) -> anyhow::Result<(Sample, Sample)>
where
    S: std::future::Future<Output = anyhow::Result<Sample>>,
    H: std::future::Future<Output = anyhow::Result<Sample>>,
{
    if sdk_first {
        let s = sdk.await?;
        Ok((s, hadoop.await?))
    } else {
        let h = hadoop.await?;
        Ok((sdk.await?, h))
    }
}

/// Each side's samples and the per-round ratios, printed as a round goes.
#[derive(Default)]
struct Figure {
    sdk: Vec<Sample>,
    hadoop: Vec<Sample>,
}

impl Figure {
    fn add(&mut self, round: usize, call: &str, s: Sample, h: Sample) {
        println!(
            "round {round}: {call}: SDK {:.0}/s, Hadoop RPC {:.0}/s ({:.2}x); CPU µs per call: \
             SDK client {:.1} + member {:.1}, hdfs-native client {:.1} + member {:.1}",
            s.rate,
            h.rate,
            h.rate / s.rate,
            s.client_us,
            s.member_us,
            h.client_us,
            h.member_us
        );
        self.sdk.push(s);
        self.hadoop.push(h);
    }

    /// Prints the medians; whether the target was met.
    fn report(self, call: &str) -> bool {
        // Each round's ratio compares the two side by side; their median is
        // what a drifting machine moves least.
        let mut ratios: Vec<f64> = self
            .hadoop
            .iter()
            .zip(&self.sdk)
            .map(|(h, s)| h.rate / s.rate)
            .collect();
        let ratio = median(&mut ratios);
        let met = ratio >= TARGET_HADOOP_OVER_SDK;
        let med = |v: &[Sample], f: fn(&Sample) -> f64| median(&mut v.iter().map(f).collect::<Vec<f64>>());
        println!(
            "  {call}: SDK {:.0} ops/s, Hadoop RPC (hdfs-native) {:.0} ops/s; median of the rounds' ratios \
             {ratio:.2}x (target >= {TARGET_HADOOP_OVER_SDK}: {})",
            med(&self.sdk, |x| x.rate),
            med(&self.hadoop, |x| x.rate),
            if met { "met" } else { "NOT met" }
        );
        println!(
            "  {call}: CPU µs per call (medians): SDK client {:.1} + member {:.1}; hdfs-native client {:.1} + member {:.1}",
            med(&self.sdk, |x| x.client_us),
            med(&self.sdk, |x| x.member_us),
            med(&self.hadoop, |x| x.client_us),
            med(&self.hadoop, |x| x.member_us),
        );
        met
    }
}

/// A Hadoop client of the NameNode at `addr`, configured by nothing but
/// what is passed here (an empty configuration directory, so a
/// HADOOP_CONF_DIR in the environment changes nothing).
pub(crate) fn hadoop_client(addr: &str, conf_dir: &std::path::Path) -> anyhow::Result<hdfs_native::Client> {
    std::fs::create_dir_all(conf_dir)?;
    hdfs_native::ClientBuilder::new()
        .with_url(format!("hdfs://{addr}"))
        .with_config_dir(conf_dir.display().to_string())
        .with_config([("dfs.replication", "1")])
        .with_user(SUPERUSER)
        .build()
        .context("build the hdfs-native client")
}

pub async fn run(a: HadoopRpcArgs) -> anyhow::Result<()> {
    if a.runs == 0 || a.files == 0 || a.clients == 0 || a.stat_passes == 0 {
        bail!("--runs, --files, --clients and --stat-passes must be positive");
    }
    if a.ops.is_empty() {
        bail!("--ops names no call");
    }
    let stat_calls = a
        .files
        .checked_mul(a.stat_passes)
        .context("--files x --stat-passes overflows")?;
    let hadoop_addr = format!("127.0.0.1:{}", free_port()?);
    let mut ns = LocalNameservice::format(
        1,
        &a.store,
        &format!("--hadoop-rpc-addr {hadoop_addr} --audit-log off"),
        SUPERUSER,
    )?;
    ns.start_all()?;
    ns.settled_leader().await?;
    if a.pin {
        let member = ns.pid(1).context("the member is not running")?;
        crate::cpu_pin::pin_process(std::process::id(), 0).context("pin this process to CPU 0")?;
        crate::cpu_pin::pin_process(member, 1).context("pin the member to CPU 1")?;
    }
    let fs = FileSystem::connect(&ns.fs_uri(), Identity::new(SUPERUSER, &[]), ns.client_options())?;
    throughput(&fs, creates("/bench", a.files), a.clients).await?;
    let hadoop = Arc::new(hadoop_client(&hadoop_addr, &ns.root().join("empty-hadoop-conf"))?);
    let stats = || -> Vec<Op> {
        (0..stat_calls)
            .map(|i| Op::GetFileInfo {
                path: format!("/bench/f{}", i % a.files),
            })
            .collect()
    };
    println!(
        "hadoop-rpc bench: 1 member ({} store), {} callers per client, {} files per round ({} getFileInfo calls), {} rounds, {}",
        a.store,
        a.clients,
        a.files,
        stat_calls,
        a.runs,
        if a.pin {
            "clients pinned to CPU 0 and the member to CPU 1"
        } else {
            "clients and member sharing every CPU"
        }
    );
    let (mut info, mut create) = (Figure::default(), Figure::default());
    for r in 1..=a.runs {
        if a.ops.contains(&BenchedCall::GetFileInfo) {
            let (s, h) = interleaved(
                r % 2 == 1,
                timed(&fs, stat_calls, throughput(&fs, stats(), a.clients)),
                timed(&fs, stat_calls, hadoop_stats(&hadoop, a.files, stat_calls, a.clients)),
            )
            .await?;
            info.add(r, "getFileInfo", s, h);
        }
        if !a.ops.contains(&BenchedCall::Create) {
            continue;
        }
        let (sdk_dir, hadoop_dir) = (format!("/created/sdk{r}"), format!("/created/hadoop{r}"));
        let (s, h) = interleaved(
            r % 2 == 0,
            timed(&fs, a.files, sdk_creates(&fs, &sdk_dir, a.files, a.clients)),
            timed(&fs, a.files, hadoop_creates(&hadoop, hadoop_dir, a.files, a.clients)),
        )
        .await?;
        create.add(r, "create", s, h);
    }
    println!("medians over {} rounds:", a.runs);
    if a.ops.contains(&BenchedCall::GetFileInfo) {
        info.report("getFileInfo");
    }
    if a.ops.contains(&BenchedCall::Create) {
        create.report("create (create + complete)");
    }
    Ok(())
}
