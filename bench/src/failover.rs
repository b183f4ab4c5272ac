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

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;

use raftfs_client::{ClientOptions, FileSystem, Identity};
use raftfs_proto::pb;

/// How long the writers run before each kill.
const WARMUP_MS: u64 = 1000;
/// How long to wait for a restarted member to catch up, or a cluster to form.
const READY_TIMEOUT_MS: u64 = 60_000;

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

struct Proc {
    addr: String,
    dir: std::path::PathBuf,
    child: Option<Child>,
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn start(exe: &Path, a: &FailoverArgs, id: u64, p: &mut Proc, log_dir: &Path) -> anyhow::Result<()> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_dir.join(format!("m{id}.log")))?;
    let child = Command::new(exe)
        .args(["metaserver", "--id", &id.to_string(), "--store", &a.store])
        .args(a.metaserver_args.split_whitespace())
        .arg("--dir")
        .arg(&p.dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("start metaserver")?;
    p.child = Some(child);
    Ok(())
}

async fn member_info(addr: &str) -> Option<pb::MemberInfoReply> {
    let ep = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .ok()?
        .connect_timeout(Duration::from_millis(500))
        .timeout(Duration::from_millis(1000));
    let mut c = pb::namespace_client::NamespaceClient::new(ep.connect().await.ok()?);
    c.member_info(pb::MemberInfoRequest {})
        .await
        .ok()
        .map(|r| r.into_inner())
}

/// The leader, once every running member agrees on it and has applied as far as it.
async fn settled_leader(procs: &[Proc]) -> anyhow::Result<u64> {
    let deadline = Instant::now() + Duration::from_millis(READY_TIMEOUT_MS);
    while Instant::now() < deadline {
        let mut infos = Vec::new();
        for p in procs {
            infos.push(member_info(&p.addr).await);
        }
        if let Some(Some(l)) = infos.iter().find(|i| i.as_ref().is_some_and(|i| i.role == "LEADER")) {
            let caught_up = infos.iter().all(|i| {
                i.as_ref()
                    .is_some_and(|i| i.leader_id == l.member_id && i.applied_index + 100 >= l.applied_index)
            });
            if caught_up {
                return Ok(l.member_id);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("no settled leader within {READY_TIMEOUT_MS} ms")
}

pub async fn run(a: FailoverArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("find the raftfs binary")?;
    let root = tempfile::tempdir()?;
    let mut procs = Vec::new();
    for id in 1..=a.members {
        procs.push(Proc {
            addr: format!("127.0.0.1:{}", free_port()?),
            dir: root.path().join(format!("m{id}")),
            child: None,
        });
    }
    let spec: Vec<String> = procs
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}={}", i + 1, p.addr))
        .collect();
    let mut ids: Vec<String> = Vec::new();
    for (i, p) in procs.iter().enumerate() {
        let out = Command::new(&exe)
            .args([
                "format",
                "--member-id",
                &(i + 1).to_string(),
                "--members",
                &spec.join(","),
            ])
            .args(["--superuser", "bench"])
            .args(&ids)
            .arg("--dir")
            .arg(&p.dir)
            .output()?;
        if !out.status.success() {
            bail!("format: {}", String::from_utf8_lossy(&out.stderr));
        }
        if ids.is_empty() {
            let text = String::from_utf8_lossy(&out.stdout);
            let line = text
                .lines()
                .find(|l| l.starts_with("Format the other members with:"))
                .context("format printed no ids")?;
            ids = line
                .trim_start_matches("Format the other members with:")
                .split_whitespace()
                .map(str::to_string)
                .collect();
        }
    }
    for (i, p) in procs.iter_mut().enumerate() {
        start(&exe, &a, i as u64 + 1, p, root.path())?;
    }
    let fs_uri = format!(
        "raftfs://{}",
        procs.iter().map(|p| p.addr.clone()).collect::<Vec<_>>().join(",")
    );
    let identity = Identity::new("bench", &["bench"]);
    let fs = Arc::new(FileSystem::connect(
        &fs_uri,
        identity.clone(),
        ClientOptions::default(),
    )?);
    settled_leader(&procs).await?;
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
        let leader = settled_leader(&procs).await?;
        tokio::time::sleep(Duration::from_millis(WARMUP_MS)).await;
        let p = &mut procs[leader as usize - 1];
        let mut child = p.child.take().context("leader process")?;
        child.kill()?;
        let killed_at = Instant::now();
        child.wait()?;
        let probe = FileSystem::connect(&fs_uri, identity.clone(), ClientOptions::default())?;
        probe.create(&format!("/failover/probe-{run}"), false).await?;
        let ms = killed_at.elapsed().as_secs_f64() * 1000.0;
        println!("run {run}: leader {leader} killed -> first write acknowledged in {ms:.0} ms");
        times.push(ms);
        start(&exe, &a, leader, &mut procs[leader as usize - 1], root.path())?;
    }
    stop.store(true, Ordering::Relaxed);
    let mut errors = 0;
    for w in writers {
        errors += w.await?;
    }
    for p in &mut procs {
        if let Some(mut c) = p.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
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
