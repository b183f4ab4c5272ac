//! `raftfs bench federation`: what a router costs, and how two
//! nameservices scale (issue 17's figures).
//!
//! Starts its own cluster of real processes: two nameservices (`ns1`,
//! `ns2`, one member each, one CA) and one router with both registered and
//! mounted (`/b1` → ns1:/bench, `/b2` → ns2:/bench). No DataNodes: the
//! figures are of the namespace. Then, in interleaved rounds:
//!
//! * **getFileInfo through the router, and routed by the SDK, vs direct**:
//!   `--clients` callers stat `--files` files of ns1: over the router
//!   (`/b1/…`, `Routing::ViaRouter`), routed by the SDK itself from the
//!   router's address (`/b1/…`, `Routing::Direct`, the default), and
//!   straight to ns1's member (`/bench/…`, the nameservice alone). The
//!   figures are each median ops/s over the direct median (targets: router
//!   ≥ 0.6, SDK direct mode ≥ 0.95).
//! * **two nameservices at once vs one alone**: `--clients` callers create
//!   `--creates` files in ns1 alone; then as many callers create as many
//!   files in ns1 and in ns2 at the same time. The figure is each
//!   nameservice's ops/s under the joint load over ns1's alone (target
//!   ≥ 0.45 each: nothing shared serializes them beyond the machine itself).
//!
//! Rounds alternate the configurations so that a noisy neighbour hits both,
//! each getFileInfo configuration before and after the others (`--phases`).
//! By default every process shares the machine's cores, so a caller's CPU
//! (the SDK's routing included) slows the nameservice too; `--pin` puts
//! the callers on one CPU and the servers on the other, as separate
//! machines would be (`crate::cpu_pin`).
//! For getFileInfo it also prints the CPU time one call costs each process
//! (this client, the router, ns1's member), which says where a router's
//! cost goes on a machine whose cores all three share.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use raftfs_client::{ClientOptions, FileSystem, Identity, Routing};
use raftfs_proto::{FsError, Op, OpResult, Permission};
use raftfs_router::admin_client::RouterAdminClient;
use raftfs_router::federation::{FederationChange, NameserviceRecord};
use raftfs_router::mount_table::{Destination, MountEntry, MountQuota, MountTableChange, Order};

use crate::localns::{member_info, LocalNameservice, READY_TIMEOUT_MS};
use crate::ports::free_port;

/// The figures the issue sets.
const TARGET_ROUTER_OVER_DIRECT: f64 = 0.6;
const TARGET_SDK_ROUTED_OVER_DIRECT: f64 = 0.95;
const TARGET_EACH_OVER_ALONE: f64 = 0.45;
const SUPERUSER: &str = "hdfs";

#[derive(Args, Debug, Clone)]
pub struct FederationArgs {
    /// Files stat'ed per getFileInfo round.
    #[arg(long, default_value_t = 20_000)]
    pub files: usize,
    /// Files created per nameservice per create round.
    #[arg(long, default_value_t = 5_000)]
    pub creates: usize,
    /// Concurrent callers per nameservice.
    #[arg(long, default_value_t = 32)]
    pub clients: usize,
    /// Rounds of each configuration (the medians are over these).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// memory or rocksdb.
    #[arg(long, default_value = "rocksdb")]
    pub store: String,
    /// The configurations each round runs, in this order (comma-separated).
    /// By default each getFileInfo configuration runs twice, in mirrored
    /// order (direct, sdk, router, router, sdk, direct), so that an order
    /// effect cancels (a phase right after a router phase ran up to ~5%
    /// slower here), then create. Fewer to profile one (for example
    /// `--phases sdk` under `perf record`). A ratio is printed when both
    /// of its configurations ran; a name given twice runs twice per round.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Phase::MIRRORED)]
    pub phases: Vec<Phase>,
    /// Pin this process (the callers, and the SDK that routes their calls)
    /// to CPU 0 and every server process (both members and the router) to
    /// CPU 1, as if the application ran on its own machine: the SDK's
    /// routing then costs the application's CPU, not the nameservice's.
    /// The router's cost stays on the members' CPU. Needs two CPUs.
    #[arg(long)]
    pub pin: bool,
}

/// One configuration of the bench.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// getFileInfo straight to ns1's member.
    Direct,
    /// getFileInfo through the router.
    Router,
    /// getFileInfo routed by the SDK itself.
    Sdk,
    /// creates in ns1 alone, then in ns1 and ns2 at once.
    Create,
}

impl Phase {
    /// Every configuration, each getFileInfo one before and after the others.
    const MIRRORED: [Phase; 7] = [
        Phase::Direct,
        Phase::Sdk,
        Phase::Router,
        Phase::Router,
        Phase::Sdk,
        Phase::Direct,
        Phase::Create,
    ];
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use clap::ValueEnum;
        let name = self.to_possible_value().expect("every phase has a name");
        f.write_str(name.get_name())
    }
}

/// One router process, killed on drop.
struct LocalRouter {
    addr: String,
    child: Child,
    log: PathBuf,
}

impl Drop for LocalRouter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl LocalRouter {
    fn start(ns: &LocalNameservice) -> anyhow::Result<LocalRouter> {
        let exe = std::env::current_exe()?;
        let addr = format!("127.0.0.1:{}", free_port()?);
        let dir = ns.root().join("router");
        let out = Command::new(&exe)
            .args(["router", "format", "--id", "1", "--routers", &format!("1={addr}")])
            .args(["--cluster-id", &ns.cluster_id, "--superuser", SUPERUSER])
            .arg("--ca-dir")
            .arg(ns.ca_dir())
            .arg("--dir")
            .arg(&dir)
            .output()?;
        if !out.status.success() {
            bail!("router format: {}", String::from_utf8_lossy(&out.stderr));
        }
        let log = ns.root().join("router.log");
        let child = Command::new(&exe)
            .args(["router", "run", "--id", "1"])
            .arg("--dir")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .context("start the router")?;
        Ok(LocalRouter { addr, child, log })
    }
}

/// The record a router registers `ns` under as `name`.
async fn record(ns: &LocalNameservice, name: &str) -> anyhow::Result<NameserviceRecord> {
    let dialer = ns.client_tls().dialer()?;
    let info = member_info(&dialer, &ns.members[0].addr)
        .await
        .context("ask the member for its ids")?;
    Ok(NameserviceRecord {
        name: name.to_string(),
        namespace_id: info.namespace_id,
        block_pool_id: info.block_pool_id,
        members: info.members.into_iter().map(|m| (m.id, m.addr)).collect(),
    })
}

fn mount(source: &str, ns: &str) -> FederationChange {
    FederationChange::Mount(MountTableChange::Add(MountEntry {
        source: source.into(),
        destinations: vec![Destination {
            nameservice: ns.into(),
            path: "/bench".into(),
        }],
        order: Order::Hash,
        read_only: false,
        owner: SUPERUSER.into(),
        group: "supergroup".into(),
        mode: 0o755,
        quota: MountQuota::default(),
    }))
}

/// Run `ops` with `clients` concurrent callers on `fs`; ops per second.
pub(crate) async fn throughput(fs: &FileSystem, ops: Vec<Op>, clients: usize) -> anyhow::Result<f64> {
    let ops = Arc::new(ops);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..clients.max(1) {
        let (fs, ops, next) = (fs.clone(), ops.clone(), next.clone());
        set.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(op) = ops.get(i) else {
                    return Ok::<(), FsError>(());
                };
                match fs.call(op.clone()).await? {
                    OpResult::Status(None) => {
                        return Err(FsError::FileNotFound(format!("{} is missing", op.src_path())))
                    }
                    _ => continue,
                }
            }
        });
    }
    while let Some(r) = set.join_next().await {
        r??;
    }
    Ok(ops.len() as f64 / started.elapsed().as_secs_f64())
}

pub(crate) fn creates(dir: &str, n: usize) -> Vec<Op> {
    (0..n)
        .map(|i| Op::Create {
            path: format!("{dir}/f{i}"),
            permission: Permission::new(0o644),
            overwrite: false,
            create_parent: true,
            replication: 1,
            block_size: 1 << 20,
        })
        .collect()
}

fn stats(dir: &str, n: usize) -> Vec<Op> {
    (0..n)
        .map(|i| Op::GetFileInfo {
            path: format!("{dir}/f{i}"),
        })
        .collect()
}

/// CPU time (µs) this process and the processes at `addrs` have used
/// (their `MemberInfo`, asked through `fs`).
async fn cpu_us(fs: &FileSystem, addrs: &[&str]) -> anyhow::Result<Vec<u64>> {
    let mut v = vec![raftfs_metaserver::server::cpu::process_cpu_time_us().context("this process's CPU time")?];
    for a in addrs {
        v.push(fs.member_info(a).await?.cpu_time_us);
    }
    Ok(v)
}

/// `ops` of getFileInfo on `fs`: ops/s and the CPU µs per op of this
/// process and of each of `addrs`.
async fn timed_stats(
    fs: &FileSystem,
    dir: &str,
    a: &FederationArgs,
    addrs: &[&str],
) -> anyhow::Result<(f64, Vec<f64>)> {
    let before = cpu_us(fs, addrs).await?;
    let rate = throughput(fs, stats(dir, a.files), a.clients).await?;
    let after = cpu_us(fs, addrs).await?;
    let per_op = before
        .iter()
        .zip(&after)
        .map(|(b, e)| e.saturating_sub(*b) as f64 / a.files as f64)
        .collect();
    Ok((rate, per_op))
}

/// One getFileInfo configuration's rounds: ops/s, and CPU µs per call of
/// each process measured.
#[derive(Default)]
struct Figures {
    rates: Vec<f64>,
    cpu: Vec<Vec<f64>>,
}

impl Figures {
    fn push(&mut self, rate: f64, cpu: Vec<f64>) {
        self.rates.push(rate);
        self.cpu.push(cpu);
    }

    /// The median rate, if the configuration ran.
    fn rate(&self) -> Option<f64> {
        (!self.rates.is_empty()).then(|| median(&mut self.rates.clone()))
    }

    /// The median CPU µs per call of each process, if the configuration ran.
    fn cpu(&self) -> Option<Vec<f64>> {
        let processes = self.cpu.first()?.len();
        Some(
            (0..processes)
                .map(|i| median(&mut self.cpu.iter().map(|r| r[i]).collect::<Vec<_>>()))
                .collect(),
        )
    }
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

async fn wait_router(router: &FileSystem, log: &std::path::Path) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_millis(READY_TIMEOUT_MS);
    loop {
        match router.get_file_info("/b1").await {
            Ok(Some(_)) => return Ok(()),
            Ok(None) | Err(_) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            other => bail!(
                "the router does not route /b1: {other:?}\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            ),
        }
    }
}

pub async fn run(a: FederationArgs) -> anyhow::Result<()> {
    if a.runs == 0 || a.files == 0 || a.creates == 0 {
        bail!("--runs, --files and --creates must be positive");
    }
    if a.phases.is_empty() {
        bail!("--phases names no configuration (direct, router, sdk, create)");
    }
    let mut ns1 = LocalNameservice::format(1, &a.store, "", SUPERUSER)?;
    let mut ns2 = ns1.format_sibling(1, "ns2", SUPERUSER)?;
    ns1.start_all()?;
    ns2.start_all()?;
    ns1.settled_leader().await?;
    ns2.settled_leader().await?;
    let router = LocalRouter::start(&ns1)?;
    if a.pin {
        crate::cpu_pin::pin_process(std::process::id(), 0).context("pin this process to CPU 0")?;
        let servers = [ns1.pid(1), ns2.pid(1), Some(router.child.id())];
        for pid in servers.into_iter().flatten() {
            crate::cpu_pin::pin_process(pid, 1).with_context(|| format!("pin server process {pid} to CPU 1"))?;
        }
    }
    let admin = RouterAdminClient::new(vec![router.addr.clone()], ns1.client_tls().dialer()?)?;
    for change in [
        FederationChange::AddNameservice(record(&ns1, "ns1").await?),
        FederationChange::AddNameservice(record(&ns2, "ns2").await?),
        mount("/b1", "ns1"),
        mount("/b2", "ns2"),
    ] {
        admin.change(SUPERUSER, change).await?;
    }
    let opts = ClientOptions {
        follower_reads: raftfs_client::FollowerReads::Off,
        ..ns1.client_options()
    };
    let me = Identity::new(SUPERUSER, &[]);
    let direct1 = FileSystem::connect(&ns1.fs_uri(), me.clone(), opts.clone())?;
    let direct2 = FileSystem::connect(&ns2.fs_uri(), me.clone(), opts.clone())?;
    let routers = format!("raftfs://{}", router.addr);
    let via_router = FileSystem::connect(
        &routers,
        me.clone(),
        ClientOptions {
            routing: Routing::ViaRouter,
            ..opts.clone()
        },
    )?;
    let sdk_routed = FileSystem::connect(
        &routers,
        me,
        ClientOptions {
            routing: Routing::Direct,
            ..opts
        },
    )?;
    wait_router(&via_router, &router.log).await?;
    wait_router(&sdk_routed, &router.log).await?;
    if !sdk_routed.routes_directly() {
        bail!("the SDK given the router's address does not route by itself");
    }
    println!(
        "federation bench: 2 nameservices ({} store, 1 member each) + 1 router, {} callers{}, {} rounds of {}",
        a.store,
        a.clients,
        if a.pin {
            " (pinned to CPU 0, the servers to CPU 1)"
        } else {
            ", all sharing the cores"
        },
        a.runs,
        a.phases.iter().map(Phase::to_string).collect::<Vec<_>>().join(", ")
    );

    throughput(&direct1, creates("/bench/stat", a.files), a.clients).await?;
    // Per round and configuration: ops/s and CPU µs per getFileInfo of
    // [client, member] (direct) or [client, router, member] (the others).
    let (mut direct, mut routed, mut sdk) = (Figures::default(), Figures::default(), Figures::default());
    let member = ns1.members[0].addr.clone();
    let (mut alone, mut joint1, mut joint2) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..a.runs {
        let mut line = format!("round {}:", r + 1);
        for phase in &a.phases {
            match phase {
                Phase::Direct => {
                    let (d, dc) = timed_stats(&direct1, "/bench/stat", &a, &[&member]).await?;
                    line += &format!(" getFileInfo direct {d:.0}/s;");
                    direct.push(d, dc);
                }
                Phase::Router => {
                    let (v, vc) = timed_stats(&via_router, "/b1/stat", &a, &[&router.addr, &member]).await?;
                    line += &format!(" via router {v:.0}/s;");
                    routed.push(v, vc);
                }
                Phase::Sdk => {
                    let (k, kc) = timed_stats(&sdk_routed, "/b1/stat", &a, &[&router.addr, &member]).await?;
                    line += &format!(" SDK-routed {k:.0}/s;");
                    sdk.push(k, kc);
                }
                Phase::Create => {
                    let one = throughput(&direct1, creates(&format!("/bench/alone{r}"), a.creates), a.clients).await?;
                    let (j1, j2) = tokio::join!(
                        throughput(&direct1, creates(&format!("/bench/joint{r}"), a.creates), a.clients),
                        throughput(&direct2, creates(&format!("/bench/joint{r}"), a.creates), a.clients),
                    );
                    let (j1, j2) = (j1?, j2?);
                    line += &format!(
                        " create ns1 alone {one:.0}/s, together ns1 {j1:.0}/s ({:.2}x) ns2 {j2:.0}/s ({:.2}x)",
                        j1 / one,
                        j2 / one
                    );
                    alone.push(one);
                    joint1.push(j1);
                    joint2.push(j2);
                }
            }
        }
        println!("{line}");
    }
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    println!("medians over {} rounds (of every phase a round ran):", a.runs);
    let d = direct.rate();
    for (name, f, target) in [
        ("via router", &routed, TARGET_ROUTER_OVER_DIRECT),
        ("routed by the SDK", &sdk, TARGET_SDK_ROUTED_OVER_DIRECT),
    ] {
        let Some(r) = f.rate() else { continue };
        print!("  getFileInfo: {name} {r:.0} ops/s");
        match d {
            Some(d) => println!(
                ", direct {d:.0} ops/s: {:.2}x (target >= {target}: {})",
                r / d,
                verdict(r / d >= target)
            ),
            None => println!(),
        }
    }
    if let (Some(d), None, None) = (d, routed.rate(), sdk.rate()) {
        println!("  getFileInfo: direct {d:.0} ops/s");
    }
    let mut cpu = Vec::new();
    if let Some(c) = direct.cpu() {
        cpu.push(format!("direct: client {:.1} + member {:.1}", c[0], c[1]));
    }
    for (name, f) in [("via router", &routed), ("SDK-routed", &sdk)] {
        if let Some(c) = f.cpu() {
            cpu.push(format!(
                "{name}: client {:.1} + router {:.1} + member {:.1}",
                c[0], c[1], c[2]
            ));
        }
    }
    if !cpu.is_empty() {
        println!("  CPU µs per getFileInfo: {}", cpu.join("; "));
    }
    if !alone.is_empty() {
        let (one, j1, j2) = (median(&mut alone), median(&mut joint1), median(&mut joint2));
        println!(
            "  create: ns1 alone {one:.0} ops/s; both at once ns1 {j1:.0} ({:.2}x), ns2 {j2:.0} ({:.2}x) \
             (target >= {TARGET_EACH_OVER_ALONE} each: {})",
            j1 / one,
            j2 / one,
            verdict(j1 / one >= TARGET_EACH_OVER_ALONE && j2 / one >= TARGET_EACH_OVER_ALONE)
        );
    }
    drop(router);
    ns1.kill_all();
    ns2.kill_all();
    Ok(())
}
