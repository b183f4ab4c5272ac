//! `raftfs bench data`: single-client put and get throughput of one large
//! file against the machine's own limits, measured side by side in one run.
//!
//! Starts its own cluster from this binary (3 metaservers, 3 DataNodes) in
//! a temporary directory (`--dir` to choose its disk), then per run:
//! * the put limit: the same bytes written to three local files in that
//!   directory and fsynced (what a replication-3 pipeline must do at least);
//! * put: the SDK writes the file with replication 3;
//! * get: the SDK reads it back, checksums verified;
//! * the get limit: one replica's block files read straight from disk (or
//!   page cache) with no checksum work.
//!
//! Prints every run, the medians and the ratios. The cluster runs TLS with
//! the default data protection, `authentication` (clients' block data in
//! plaintext, each request proving its block token). With
//! `--compare-insecure` a second cluster runs in plaintext (`--insecure`),
//! and with `--compare-privacy` another runs data protection `privacy`
//! (clients' block data in TLS); each run also puts and gets the file
//! there (through the DataNodes), interleaved, for what security costs.
//!
//! `raftfs bench blockreport` times a member processing a full block report
//! of `--blocks` replicas while a client measures getFileInfo latency.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;

use raftfs_client::{ClientOptions, ClientTls, FileSystem, Identity};

use crate::localns::LocalNameservice;
use crate::ports::free_port;

/// Bytes per write or read call of the benchmark.
const IO_BYTES: usize = 4 * 1024 * 1024;

#[derive(Args, Debug, Clone)]
pub struct DataArgs {
    /// Size of the file, MiB.
    #[arg(long = "size-mb", default_value_t = 1024)]
    pub size_mb: u64,
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Block size of the file, MiB (HDFS default 128).
    #[arg(long = "block-size-mb", default_value_t = 128)]
    pub block_size_mb: u64,
    /// Where the cluster and the baseline files live (default: a temporary directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// DataNodes to start (at least 3).
    #[arg(long, default_value_t = 3)]
    pub datanodes: usize,
    /// In the first run, kill -9 a DataNode of the write pipeline after this
    /// many MiB; then check the file and time its return to 3 replicas
    /// (give --datanodes 4 so that there is somewhere to copy to).
    #[arg(long = "kill-datanode-after-mb")]
    pub kill_datanode_after_mb: Option<u64>,
    /// Also run a plaintext (`--insecure`) cluster and time put and get
    /// through the DataNodes on it in every run: the cost of TLS and tokens.
    #[arg(long = "compare-insecure")]
    pub compare_insecure: bool,
    /// Also run a cluster with data protection `privacy` (clients' block
    /// data in TLS) and time put and get through the DataNodes on it in
    /// every run: the cost of encrypting the data path.
    #[arg(long = "compare-privacy")]
    pub compare_privacy: bool,
}

struct LocalCluster {
    /// The three members (killed on drop).
    ns: LocalNameservice,
    /// The DataNodes.
    children: Vec<Child>,
    fs_uri: String,
    tls: ClientTls,
    dn_dirs: Vec<PathBuf>,
    /// (data transfer address, index in `children`) of each DataNode.
    dn_addrs: Vec<(String, usize)>,
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Start `exe` with `args`, its output appended to `log`.
pub(crate) fn spawn(exe: &Path, args: &[String], log: &Path) -> anyhow::Result<Child> {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
    Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("start a cluster process")
}

async fn start_cluster(root: &Path, datanodes: usize, insecure: bool, privacy: bool) -> anyhow::Result<LocalCluster> {
    let exe = std::env::current_exe().context("find the raftfs binary")?;
    std::fs::create_dir_all(root)?;
    let member_args = format!(
        "--safemode-extension-ms 0 --datanode-dead-ms 5000 --replication-interval-ms 500{}",
        if privacy { " --data-protection privacy" } else { "" }
    );
    let mut ns = LocalNameservice::format_with(3, "rocksdb", &member_args, "bench", insecure)?;
    ns.start_all()?;
    let fs_uri = ns.fs_uri();
    let mut children = Vec::new();
    let mut dn_dirs = Vec::new();
    let mut dn_addrs = Vec::new();
    for j in 1..=datanodes {
        let dir = root.join(format!("dn{j}"));
        let addr = format!("127.0.0.1:{}", free_port()?);
        dn_addrs.push((addr.clone(), children.len()));
        let mut args: Vec<String> = vec![
            "datanode".into(),
            "--dir".into(),
            dir.display().to_string(),
            "--domain-socket".into(),
            root.join(format!("dn{j}.sock")).display().to_string(),
            "--listen".into(),
            addr,
            "--nameservice".into(),
            fs_uri.clone(),
            "--heartbeat-ms".into(),
            "500".into(),
        ];
        args.extend(ns.datanode_tls_args(&format!("dn{j}"), &root.join(format!("dn{j}-tls")))?);
        children.push(spawn(&exe, &args, &root.join(format!("dn{j}.log")))?);
        dn_dirs.push(dir);
    }
    let tls = ns.client_tls();
    let cluster = LocalCluster {
        ns,
        children,
        fs_uri,
        tls,
        dn_dirs,
        dn_addrs,
    };
    let fs = client(&cluster.fs_uri, &cluster.tls)?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let live = match fs.admin(raftfs_proto::AdminOp::DatanodeReport).await {
            Ok(raftfs_proto::AdminResult::Datanodes(d)) => d.iter().filter(|d| d.live).count(),
            _ => 0,
        };
        if live == datanodes {
            return Ok(cluster);
        }
        if Instant::now() > deadline {
            bail!(
                "the cluster did not come up; see the logs in {} and {}",
                cluster.ns.root().display(),
                root.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn client(uri: &str, tls: &ClientTls) -> anyhow::Result<FileSystem> {
    client_with(uri, tls, true)
}

fn client_with(uri: &str, tls: &ClientTls, short_circuit: bool) -> anyhow::Result<FileSystem> {
    let opts = ClientOptions {
        short_circuit,
        tls: tls.clone(),
        ..ClientOptions::default()
    };
    Ok(FileSystem::connect(uri, Identity::new("bench", &["bench"]), opts)?)
}

/// Write `size` bytes of `data` (repeated) to `path` with replication 3,
/// then read them back; (put seconds, get seconds).
async fn put_then_get(fs: &FileSystem, path: &str, data: &[u8], size: u64, block: u64) -> anyhow::Result<(f64, f64)> {
    let put = timed_put(fs, path, data, size, 3, block).await?;
    let (get, got, _) = timed_get(fs, path).await?;
    if got != size {
        bail!("read {got} of {size} bytes from {path}");
    }
    Ok((put, get))
}

/// Write `size` bytes of `data` (repeated) to `path` through `fs`; seconds.
pub(crate) async fn timed_put(
    fs: &FileSystem,
    path: &str,
    data: &[u8],
    size: u64,
    replication: u16,
    block: u64,
) -> anyhow::Result<f64> {
    let start = Instant::now();
    let mut w = fs.create_file_opt(path, true, None, replication, block, true).await?;
    let mut left = size;
    while left > 0 {
        let n = left.min(data.len() as u64) as usize;
        w.write(&data[..n]).await?;
        left -= n as u64;
    }
    w.close().await?;
    Ok(start.elapsed().as_secs_f64())
}

/// Read all of `path` through `fs`; (seconds, bytes, bytes read short-circuit).
pub(crate) async fn timed_get(fs: &FileSystem, path: &str) -> anyhow::Result<(f64, u64, u64)> {
    let start = Instant::now();
    let mut r = fs.open(path).await?;
    let mut buf = vec![0u8; IO_BYTES];
    let mut got = 0u64;
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        got += n as u64;
    }
    Ok((start.elapsed().as_secs_f64(), got, r.short_circuit_bytes()))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn mibs(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / secs.max(1e-9)
}

/// Write `size` bytes to three files in `dir` and fsync them: the least a
/// replication-3 write does.
fn local_put(dir: &Path, data: &[u8], size: u64) -> anyhow::Result<f64> {
    let start = Instant::now();
    for k in 0..3 {
        let p = dir.join(format!("baseline-{k}"));
        let mut f = std::fs::File::create(&p)?;
        let mut left = size;
        while left > 0 {
            let n = left.min(data.len() as u64) as usize;
            f.write_all(&data[..n])?;
            left -= n as u64;
        }
        f.sync_all()?;
    }
    let secs = start.elapsed().as_secs_f64();
    for k in 0..3 {
        let _ = std::fs::remove_file(dir.join(format!("baseline-{k}")));
    }
    Ok(secs)
}

/// Block files of `dir` (a DataNode's data directory).
fn block_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            block_files(&p, out);
        } else if p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("blk_") && !n.to_string_lossy().ends_with(".meta"))
        {
            out.push(p);
        }
    }
}

/// Read one replica's block files straight from the file system.
fn local_get(files: &[PathBuf]) -> anyhow::Result<(f64, u64)> {
    let mut buf = vec![0u8; IO_BYTES];
    let start = Instant::now();
    let mut total = 0u64;
    for p in files {
        let mut f = std::fs::File::open(p)?;
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
    }
    Ok((start.elapsed().as_secs_f64(), total))
}

pub async fn run(a: DataArgs) -> anyhow::Result<()> {
    let tmp;
    let root = match &a.dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            tempfile::tempdir_in(d)?.keep()
        }
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    if a.datanodes < 3 {
        bail!("--datanodes must be at least 3 (the files have replication 3)");
    }
    let mut cluster = start_cluster(&root, a.datanodes, false, false).await?;
    // Clusters to compare with: (name, cluster, client without short-circuit, puts, gets).
    let mut others = Vec::new();
    for (name, on, insecure, privacy) in [
        ("insecure", a.compare_insecure, true, false),
        ("privacy", a.compare_privacy, false, true),
    ] {
        if on {
            let c = start_cluster(&root.join(name), a.datanodes, insecure, privacy).await?;
            let cfs = client_with(&c.fs_uri, &c.tls, false)?;
            others.push((name, c, cfs, Vec::new(), Vec::new()));
        }
    }
    let fs = client(&cluster.fs_uri, &cluster.tls)?;
    let remote = client_with(&cluster.fs_uri, &cluster.tls, false)?;
    let size = a.size_mb << 20;
    let data: Vec<u8> = (0..IO_BYTES).map(|i| (i * 7 + i / 4096) as u8).collect();
    println!(
        "# raftfs bench data: {} MiB file, replication 3, {} MiB blocks, 3 metaservers + {} DataNodes on this machine, dir {}",
        a.size_mb,
        a.block_size_mb,
        a.datanodes,
        root.display()
    );
    let (mut base_w, mut put, mut get, mut base_r) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut get_remote = Vec::new();
    let (mut compare_put, mut compare_get) = (Vec::new(), Vec::new());
    for run in 1..=a.runs {
        let bw = local_put(&root, &data, size)?;
        let path = format!("/bench/data-{run}");
        let start = Instant::now();
        let mut w = fs
            .create_file_opt(&path, true, None, 3, a.block_size_mb << 20, true)
            .await?;
        let mut left = size;
        let mut killed: Option<String> = None;
        while left > 0 {
            let n = left.min(IO_BYTES as u64) as usize;
            w.write(&data[..n]).await?;
            left -= n as u64;
            let written_mb = (size - left) >> 20;
            if run == 1 && killed.is_none() && a.kill_datanode_after_mb.is_some_and(|k| written_mb >= k) {
                w.hflush().await?;
                let loc = fs.block_locations(&path).await?;
                let victim = loc.blocks.last().context("no block")?.locations[0].clone();
                let (_, i) = cluster
                    .dn_addrs
                    .iter()
                    .find(|(addr, _)| *addr == victim.addr)
                    .context("the victim is one of ours")?;
                cluster.children[*i].kill()?;
                println!("run {run}: killed DataNode {} after {written_mb} MiB", victim.addr);
                killed = Some(victim.uuid);
            }
        }
        w.close().await?;
        let p = start.elapsed().as_secs_f64();
        let (g, got, local) = timed_get(&fs, &path).await?;
        if got != size {
            bail!("read {got} of {size} bytes");
        }
        if let Some(uuid) = &killed {
            // Every byte is what was written.
            let mut r = fs.open(&path).await?;
            let mut buf = vec![0u8; IO_BYTES];
            let mut at = 0usize;
            loop {
                let n = r.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                for (k, b) in buf[..n].iter().enumerate() {
                    if *b != data[(at + k) % IO_BYTES] {
                        bail!("byte {} reads back wrong after the DataNode was killed", at + k);
                    }
                }
                at += n;
            }
            let since = Instant::now();
            loop {
                let loc = fs.block_locations(&path).await?;
                let short = loc
                    .blocks
                    .iter()
                    .filter(|b| b.locations.iter().filter(|l| l.uuid != *uuid).count() < 3)
                    .count();
                if short == 0 {
                    break;
                }
                if since.elapsed() > Duration::from_secs(300) {
                    bail!("{short} blocks still under-replicated after 300 s");
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            println!(
                "run {run}: the file reads back identical; every block back at 3 replicas {:.1} s after the write",
                since.elapsed().as_secs_f64()
            );
        }
        let (gr, got_r, _) = timed_get(&remote, &path).await?;
        if got_r != size {
            bail!("read {got_r} of {size} bytes through the DataNodes");
        }
        // One replica's files: those of the DataNode holding the first block's first replica.
        let loc = fs.block_locations(&path).await?;
        let first = &loc.blocks.first().context("no blocks")?.locations[0];
        let ids: Vec<String> = loc.blocks.iter().map(|b| b.block.file_name()).collect();
        let mut files = Vec::new();
        for d in &cluster.dn_dirs {
            block_files(d, &mut files);
        }
        let mut mine: Vec<PathBuf> = Vec::new();
        for id in &ids {
            if let Some(f) = files
                .iter()
                .find(|f| f.file_name().is_some_and(|n| n.to_string_lossy() == *id))
            {
                mine.push(f.clone());
            }
        }
        let (br, read_bytes) = local_get(&mine)?;
        let _ = first;
        println!(
            "run {run}: local 3x write+fsync {:.0} MiB/s | put {:.0} MiB/s | get {:.0} MiB/s ({}% short-circuit) | get through the DataNodes {:.0} MiB/s | local read of one replica {:.0} MiB/s ({} MiB)",
            mibs(size, bw),
            mibs(size, p),
            mibs(size, g),
            local * 100 / size.max(1),
            mibs(size, gr),
            mibs(read_bytes, br),
            read_bytes >> 20
        );
        base_w.push(mibs(size, bw));
        put.push(mibs(size, p));
        get.push(mibs(size, g));
        get_remote.push(mibs(size, gr));
        base_r.push(mibs(read_bytes, br));
        fs.delete(&path, false).await?;
        if !others.is_empty() {
            // Each cluster puts and gets a file of its own through the
            // DataNodes, in an order that rotates every run (what runs
            // first shares the disk with the writeback of what came before).
            let n = others.len() + 1;
            for k in 0..n {
                let i = (k + run) % n;
                let (name, ofs) = match i {
                    0 => ("authentication", &remote),
                    _ => (others[i - 1].0, &others[i - 1].2),
                };
                let cpath = format!("/bench/compare-{run}");
                let (pp, pg) = put_then_get(ofs, &cpath, &data, size, a.block_size_mb << 20).await?;
                ofs.delete(&cpath, false).await?;
                println!(
                    "run {run}: {name} cluster: put {:.0} MiB/s | get through the DataNodes {:.0} MiB/s",
                    mibs(size, pp),
                    mibs(size, pg)
                );
                let (puts, gets) = match i {
                    0 => (&mut compare_put, &mut compare_get),
                    _ => {
                        let o = &mut others[i - 1];
                        (&mut o.3, &mut o.4)
                    }
                };
                puts.push(mibs(size, pp));
                gets.push(mibs(size, pg));
            }
        }
    }
    let medians = |name: &str, puts: &mut Vec<f64>, gets: &mut Vec<f64>| (name.to_string(), median(puts), median(gets));
    let mut rows = Vec::new();
    if !others.is_empty() {
        rows.push(medians("authentication", &mut compare_put, &mut compare_get));
    }
    for (name, _, _, puts, gets) in &mut others {
        rows.push(medians(name, puts, gets));
    }
    for (i, (x, xp, xg)) in rows.iter().enumerate() {
        for (y, yp, yg) in &rows[i + 1..] {
            let (num, den) = if y == "insecure" {
                ((x, xp, xg), (y, yp, yg))
            } else {
                ((y, yp, yg), (x, xp, xg))
            };
            println!(
                "{} / {}: put {:.0} vs {:.0} MiB/s ({:.2}x), get through the DataNodes {:.0} vs {:.0} MiB/s ({:.2}x)",
                num.0,
                den.0,
                num.1,
                den.1,
                num.1 / den.1.max(f64::MIN_POSITIVE),
                num.2,
                den.2,
                num.2 / den.2.max(f64::MIN_POSITIVE)
            );
        }
    }
    drop(others);
    let (bw, p, g, br) = (
        median(&mut base_w),
        median(&mut put),
        median(&mut get),
        median(&mut base_r),
    );
    println!("medians: local write {bw:.0} MiB/s, put {p:.0} MiB/s, get {g:.0} MiB/s, local read {br:.0} MiB/s");
    println!(
        "put / local 3x write+fsync = {:.2} (target >= 0.40); get / local read = {:.2} (target >= 0.50)",
        p / bw,
        g / br
    );
    drop(cluster);
    if a.dir.is_some() {
        let _ = std::fs::remove_dir_all(&root);
    }
    Ok(())
}

#[derive(Args, Debug, Clone)]
pub struct BlockReportArgs {
    /// Replicas in the full report.
    #[arg(long, default_value_t = 1_000_000)]
    pub blocks: u64,
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
}

/// Time a member's processing of a full block report, with getFileInfo
/// latency measured before and during it.
pub async fn blockreport(a: BlockReportArgs) -> anyhow::Result<()> {
    use raftfs_metaserver::blocks::BlockManager;
    use raftfs_metaserver::store::BlockRecord;
    use raftfs_proto::datanode::{FullReport, Registration};
    use raftfs_proto::{Block, CallCtx, DatanodeId, Op, ReplicaState, ReportedReplica};

    let dir = tempfile::tempdir()?;
    let member = Arc::new(
        raftfs_metaserver::testkit::single_member(dir.path(), raftfs_metaserver::server::StoreKind::Memory, "bench")
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?,
    );
    let ctx = CallCtx {
        client_id: "bench".into(),
        call_id: 1,
        user: "bench".into(),
        groups: vec![],
        routed_by: 0,
    };
    member
        .call(
            ctx.clone(),
            Op::Mkdirs {
                path: "/a/b/c".into(),
                permission: raftfs_proto::Permission(0o755),
                create_parent: true,
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    println!(
        "# raftfs bench blockreport: {} replicas in one full report (pages of {}), getFileInfo latency alongside",
        a.blocks,
        raftfs_proto::datanode::MAX_REPORT_REPLICAS_PER_PAGE
    );
    let mut times = Vec::new();
    let mut first_times = Vec::new();
    for run in 1..=a.runs {
        let bm = Arc::new(BlockManager::new(Default::default()));
        let first = raftfs_metaserver::namespace::FIRST_BLOCK_ID;
        let rows: std::collections::BTreeMap<u64, Option<BlockRecord>> = (0..a.blocks)
            .map(|i| {
                (
                    first + i,
                    Some(BlockRecord {
                        inode: 20_000 + i / 4,
                        gen_stamp: 1001,
                        num_bytes: 1 << 20,
                        replication: 3,
                        under_construction: false,
                    }),
                )
            })
            .collect();
        bm.apply_changes(&rows, Some(first + a.blocks), None);
        let id = DatanodeId {
            uuid: "dn-bench".into(),
            addr: "127.0.0.1:1".into(),
            hostname: "127.0.0.1".into(),
            domain_socket: String::new(),
        };
        bm.register(
            &Registration {
                id,
                cluster_id: "CID".into(),
                block_pool_id: "BP".into(),
                storage_ids: vec!["DS-1".into()],
                http_addr: String::new(),
                hadoop_xfer_addr: String::new(),
            },
            Instant::now(),
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        let replicas: Vec<ReportedReplica> = (0..a.blocks)
            .map(|i| ReportedReplica {
                block: Block {
                    id: first + i,
                    gen_stamp: 1001,
                    num_bytes: 1 << 20,
                },
                state: ReplicaState::Finalized,
            })
            .collect();
        let pages: Vec<Vec<ReportedReplica>> = replicas
            .chunks(raftfs_proto::datanode::MAX_REPORT_REPLICAS_PER_PAGE)
            .map(<[ReportedReplica]>::to_vec)
            .collect();
        // getFileInfo latency while the report is processed (a real member's calls).
        let stop = Arc::new(AtomicBool::new(false));
        let (m2, s2, c2) = (member.clone(), stop.clone(), ctx.clone());
        let prober = tokio::spawn(async move {
            let mut lat = Vec::new();
            while !s2.load(Ordering::Relaxed) {
                let t = Instant::now();
                let _ = m2.call(c2.clone(), Op::GetFileInfo { path: "/a/b/c".into() }).await;
                lat.push(t.elapsed().as_secs_f64() * 1e3);
            }
            lat
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let n = pages.len();
        // The node's first report (as at a start), then the same again (a
        // periodic report, which must also find replicas that went away).
        let mut secs = [0f64; 2];
        for (k, report_id) in [(0usize, 1u64), (1, 2)] {
            let (bm2, pages) = (bm.clone(), pages.clone());
            let start = Instant::now();
            tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
                for (i, page) in pages.into_iter().enumerate() {
                    bm2.full_report(FullReport {
                        uuid: "dn-bench".into(),
                        block_pool_id: "BP".into(),
                        report_id,
                        page: i as u32,
                        last_page: i + 1 == n,
                        replicas: page,
                    })
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                }
                Ok(())
            })
            .await??;
            secs[k] = start.elapsed().as_secs_f64();
        }
        stop.store(true, Ordering::Relaxed);
        let mut lat = prober.await?;
        lat.sort_by(f64::total_cmp);
        let pct = |q: f64| lat.get(((lat.len() as f64 - 1.0) * q) as usize).copied().unwrap_or(0.0);
        let (total, missing) = bm.counts();
        println!(
            "run {run}: first report {:.0} ms, periodic report {:.0} ms ({} blocks complete, {missing} without a replica); getFileInfo during them: {} calls, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            secs[0] * 1e3,
            secs[1] * 1e3,
            total,
            lat.len(),
            pct(0.5),
            pct(0.99),
            pct(1.0)
        );
        first_times.push(secs[0] * 1e3);
        let secs = secs[1];
        times.push(secs * 1e3);
    }
    println!(
        "median: first report {:.0} ms, periodic report {:.0} ms for {} replicas (target <= 2000 ms)",
        median(&mut first_times),
        median(&mut times),
        a.blocks
    );
    member.shutdown().await;
    Ok(())
}
