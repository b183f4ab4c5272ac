//! `raftfs bench hadoop-data`: a large file put and got by `hdfs-native`
//! (Hadoop's ClientProtocol to the member, DataTransferProtocol to the
//! DataNodes) against the raftfs SDK (gRPC, short-circuit reads off), on
//! one cluster, rounds interleaved so the machine's noise falls on both
//! alike.
//!
//! One member (Hadoop RPC on), `--datanodes` DataNodes each serving
//! DataTransferProtocol beside raftfs's gRPC transfer, the files written
//! with `--replication` (3 by default: a three-DataNode pipeline, the
//! downstream hops over raftfs's transfer in both cases). The issue's
//! figure: hdfs-native's put and get each at least 0.8x the SDK's rate.
//!
//! Caveats: the SDK's transfer is TLS and DataTransferProtocol is not
//! (Hadoop encrypts it only with `dfs.encrypt.data.transfer`, which is not
//! served), which favours hdfs-native; every process shares the same two
//! cores, so a replication-3 put is bound by CPU, not disk.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::Bytes;
use clap::Args;
use futures::StreamExt;
use raftfs_client::{ClientOptions, FileSystem, Identity};

use crate::federation::median;
use crate::localns::LocalNameservice;
use crate::ports::free_port;

/// The figure the issue sets: hdfs-native keeps this share of the SDK's rate.
const TARGET_HADOOP_OVER_SDK: f64 = 0.8;
const SUPERUSER: &str = "hdfs";
/// Bytes per write call of either client.
const IO_BYTES: usize = 4 << 20;
const BLOCK_BYTES: u64 = 128 << 20;
/// How long the DataNodes may take to register.
const REGISTER_TIMEOUT_MS: u64 = 60_000;

#[derive(Args, Debug, Clone)]
pub struct HadoopDataArgs {
    /// Size of the file, MiB.
    #[arg(long = "file-mib", default_value_t = 1024)]
    pub file_mib: u64,
    /// Rounds of each (the medians are over these).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// DataNodes to start.
    #[arg(long, default_value_t = 3)]
    pub datanodes: usize,
    /// Replication of the files written (at most --datanodes).
    #[arg(long, default_value_t = 3)]
    pub replication: u16,
}

/// The DataNode processes, killed on drop.
struct Datanodes(Vec<Child>);

impl Drop for Datanodes {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Start `n` DataNodes of `ns`, each with DataTransferProtocol on a port of its own.
fn start_datanodes(ns: &LocalNameservice, n: usize) -> anyhow::Result<Datanodes> {
    let exe = std::env::current_exe().context("find the raftfs binary")?;
    let mut children = Datanodes(Vec::new());
    for j in 1..=n {
        let mut args: Vec<String> = vec![
            "datanode".into(),
            "--dir".into(),
            ns.root().join(format!("dn{j}")).display().to_string(),
            "--listen".into(),
            format!("127.0.0.1:{}", free_port()?),
            "--hadoop-xfer-addr".into(),
            format!("127.0.0.1:{}", free_port()?),
            "--nameservice".into(),
            ns.fs_uri(),
            "--heartbeat-ms".into(),
            "500".into(),
        ];
        args.extend(ns.datanode_tls_args(&format!("dn{j}"), &ns.root().join(format!("dn{j}-tls")))?);
        let log = ns.root().join(format!("dn{j}.log"));
        children.0.push(crate::datapath::spawn(&exe, &args, &log)?);
    }
    Ok(children)
}

async fn wait_registered(fs: &FileSystem, n: usize, root: &Path) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_millis(REGISTER_TIMEOUT_MS);
    loop {
        if let Ok(raftfs_proto::AdminResult::Datanodes(d)) = fs.admin(raftfs_proto::AdminOp::DatanodeReport).await {
            if d.iter().filter(|n| n.live).count() >= n {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            bail!("the DataNodes did not register; see {}", root.display());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The SDK's put of `size` bytes to `path`; seconds.
async fn sdk_put(fs: &FileSystem, path: &str, data: &Bytes, size: u64, replication: u16) -> anyhow::Result<f64> {
    crate::datapath::timed_put(fs, path, data, size, replication, BLOCK_BYTES).await
}

/// The SDK's sequential read of `path`, none of it short-circuit; seconds.
async fn sdk_get(fs: &FileSystem, path: &str, size: u64) -> anyhow::Result<f64> {
    let (secs, got, local) = crate::datapath::timed_get(fs, path).await?;
    if got != size || local != 0 {
        bail!("the SDK read {got} of {size} bytes of {path}, {local} short-circuit");
    }
    Ok(secs)
}

/// hdfs-native's put of `size` bytes to `path`; seconds.
async fn hadoop_put(
    client: &hdfs_native::Client,
    path: &str,
    data: &Bytes,
    size: u64,
    replication: u16,
) -> anyhow::Result<f64> {
    let start = Instant::now();
    let opts = hdfs_native::WriteOptions::default()
        .overwrite(true)
        .create_parent(true)
        .replication(u32::from(replication))
        .block_size(BLOCK_BYTES);
    let mut w = client
        .create(path, opts)
        .await
        .with_context(|| format!("create {path}"))?;
    let mut left = size;
    while left > 0 {
        let n = left.min(data.len() as u64) as usize;
        w.write_bytes(data.slice(..n)).await?;
        left -= n as u64;
    }
    w.close().await.with_context(|| format!("close {path}"))?;
    Ok(start.elapsed().as_secs_f64())
}

/// hdfs-native's read of all of `path`, streamed block by block; seconds.
async fn hadoop_get(client: &hdfs_native::Client, path: &str, size: u64) -> anyhow::Result<f64> {
    let start = Instant::now();
    let r = client.read(path).await.with_context(|| format!("open {path}"))?;
    if r.file_length() as u64 != size {
        bail!("{path} is {} bytes, not {size}", r.file_length());
    }
    let mut stream = r.read_range_stream(0, r.file_length());
    let mut got = 0u64;
    while let Some(bytes) = stream.next().await {
        got += bytes?.len() as u64;
    }
    if got != size {
        bail!("hdfs-native read {got} of {size} bytes of {path}");
    }
    Ok(start.elapsed().as_secs_f64())
}

fn mibs(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / secs.max(1e-9)
}

/// One direction's rates, per round.
#[derive(Default)]
struct Rates {
    sdk: Vec<f64>,
    hadoop: Vec<f64>,
}

impl Rates {
    fn add(&mut self, round: usize, what: &str, size: u64, sdk_secs: f64, hadoop_secs: f64) {
        let (s, h) = (mibs(size, sdk_secs), mibs(size, hadoop_secs));
        println!(
            "round {round}: {what}: SDK {s:.0} MiB/s, hdfs-native {h:.0} MiB/s ({:.2}x)",
            h / s
        );
        self.sdk.push(s);
        self.hadoop.push(h);
    }

    fn report(mut self, what: &str) {
        let mut ratios: Vec<f64> = self.hadoop.iter().zip(&self.sdk).map(|(h, s)| h / s).collect();
        let ratio = median(&mut ratios);
        let met = ratio >= TARGET_HADOOP_OVER_SDK;
        println!(
            "  {what}: SDK {:.0} MiB/s, hdfs-native {:.0} MiB/s; median of the rounds' ratios {ratio:.2}x \
             (target >= {TARGET_HADOOP_OVER_SDK}: {})",
            median(&mut self.sdk),
            median(&mut self.hadoop),
            if met { "met" } else { "NOT met" }
        );
    }
}

pub async fn run(a: HadoopDataArgs) -> anyhow::Result<()> {
    if a.runs == 0 || a.file_mib == 0 || a.datanodes == 0 {
        bail!("--runs, --file-mib and --datanodes must be positive");
    }
    if a.replication == 0 || a.replication as usize > a.datanodes {
        bail!("--replication must be between 1 and --datanodes ({})", a.datanodes);
    }
    let size = a.file_mib << 20;
    let hadoop_addr = format!("127.0.0.1:{}", free_port()?);
    let mut ns = LocalNameservice::format(
        1,
        "rocksdb",
        &format!("--hadoop-rpc-addr {hadoop_addr} --audit-log off --safemode-extension-ms 0"),
        SUPERUSER,
    )?;
    ns.start_all()?;
    ns.settled_leader().await?;
    let _datanodes = start_datanodes(&ns, a.datanodes)?;
    let opts = ClientOptions {
        short_circuit: false,
        ..ns.client_options()
    };
    let fs = FileSystem::connect(&ns.fs_uri(), Identity::new(SUPERUSER, &[]), opts)?;
    wait_registered(&fs, a.datanodes, ns.root()).await?;
    let hadoop = crate::hadoop_rpc::hadoop_client(&hadoop_addr, &ns.root().join("empty-hadoop-conf"))?;
    let data = Bytes::from((0..IO_BYTES).map(|i| (i * 7 + i / 4096) as u8).collect::<Vec<u8>>());
    println!(
        "hadoop-data bench: a {} MiB file, 1 member, {} DataNodes, replication {}, {} rounds",
        a.file_mib, a.datanodes, a.replication, a.runs
    );
    let (mut put, mut get) = (Rates::default(), Rates::default());
    for r in 1..=a.runs {
        let (sdk_path, hadoop_path) = (format!("/bench/sdk{r}"), format!("/bench/hadoop{r}"));
        // Alternate which goes first, so neither always runs on a warmer machine.
        let (s, h) = if r % 2 == 1 {
            let s = sdk_put(&fs, &sdk_path, &data, size, a.replication).await?;
            (s, hadoop_put(&hadoop, &hadoop_path, &data, size, a.replication).await?)
        } else {
            let h = hadoop_put(&hadoop, &hadoop_path, &data, size, a.replication).await?;
            (sdk_put(&fs, &sdk_path, &data, size, a.replication).await?, h)
        };
        put.add(r, "put", size, s, h);
        // Each reads the file the other wrote, so neither reads only its own.
        let (s, h) = if r % 2 == 0 {
            let s = sdk_get(&fs, &hadoop_path, size).await?;
            (s, hadoop_get(&hadoop, &sdk_path, size).await?)
        } else {
            let h = hadoop_get(&hadoop, &sdk_path, size).await?;
            (sdk_get(&fs, &hadoop_path, size).await?, h)
        };
        get.add(r, "get", size, s, h);
        fs.delete(&sdk_path, false).await?;
        fs.delete(&hadoop_path, false).await?;
    }
    println!("medians over {} rounds:", a.runs);
    put.report(&format!("put of {} MiB", a.file_mib));
    get.report(&format!("get of {} MiB", a.file_mib));
    Ok(())
}
