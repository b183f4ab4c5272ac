//! `raftfs dev`: a whole local nameservice in one command.
//!
//! Formats `DIR/ns1/m<i>` on first use, starts every member as its own OS
//! process (`raftfs metaserver`, so one can be `kill -9`ed), writes
//! `DIR/ns1/m<i>.pid` and `DIR/ns1/m<i>.log`, prints the `--fs` value, and
//! stops them all on Ctrl-C or SIGTERM. Run again on the same DIR, it
//! restarts with the data intact.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;

use raftfs_metaserver::server::layout;

use crate::cli_format::{new_ids, version_for, FormatArgs};

/// Print a line of progress; a closed stdout (a pipe whose reader left) must
/// not stop the cluster, so write errors are ignored.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// Most members `raftfs dev` starts.
const MAX_DEV_MEMBERS: u64 = 9;
/// How long to wait for the nameservice to answer before giving up.
const READY_TIMEOUT_MS: u64 = 60_000;
/// How long members get to exit after SIGTERM before SIGKILL.
const STOP_GRACE_MS: u64 = 5_000;

#[derive(Args, Debug, Clone)]
pub struct DevArgs {
    /// Where the cluster keeps its data, pids and logs.
    #[arg(long, default_value = "./dev-data")]
    pub dir: PathBuf,
    /// Member i listens on port-base + i.
    #[arg(long = "port-base", default_value_t = 9000)]
    pub port_base: u16,
    /// Members of the nameservice (3 or 5 keep a majority through failures).
    #[arg(long, default_value_t = 3)]
    pub members: u64,
    /// Namespace store of every member: rocksdb or memory.
    #[arg(long, default_value = "rocksdb")]
    pub store: String,
    /// Exit once the nameservice serves, leaving the members running (for scripts and tests).
    #[arg(long)]
    pub detach: bool,
}

fn member_dir(root: &Path, i: u64) -> PathBuf {
    root.join("ns1").join(format!("m{i}"))
}

fn pid_file(root: &Path, i: u64) -> PathBuf {
    root.join("ns1").join(format!("m{i}.pid"))
}

/// Format every member of a new dev nameservice (one identity for all).
fn format_all(a: &DevArgs, members: &BTreeMap<u64, String>) -> anyhow::Result<()> {
    let now = raftfs_metaserver::server::member::now_ms();
    let (cid, nsid, bp) = new_ids(now);
    for id in members.keys() {
        let fa = FormatArgs {
            dir: member_dir(&a.dir, *id),
            member_id: *id,
            members: String::new(),
            nameservice: "ns1".into(),
            cluster_id: Some(cid.clone()),
            namespace_id: Some(nsid),
            block_pool_id: Some(bp.clone()),
            superuser: None,
            join: false,
        };
        let v = version_for(&fa, members, now);
        raftfs_metaserver::server::format_member(&fa.dir, &v).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    say!("Formatted nameservice ns1 of cluster {cid} in {}", a.dir.display());
    Ok(())
}

fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: sending a signal to a child we started has no memory effects.
    unsafe {
        libc::kill(pid, sig);
    }
}

pub async fn run(a: DevArgs) -> anyhow::Result<()> {
    if a.members == 0 || a.members > MAX_DEV_MEMBERS {
        bail!("--members must be 1..={MAX_DEV_MEMBERS}");
    }
    if a.store != "rocksdb" && a.store != "memory" {
        bail!("--store must be rocksdb or memory, not {:?}", a.store);
    }
    let members: BTreeMap<u64, String> = (1..=a.members)
        .map(|i| (i, format!("127.0.0.1:{}", a.port_base as u64 + i)))
        .collect();
    if a.port_base as u64 + a.members > u16::MAX as u64 {
        bail!("--port-base {} leaves no room for {} members", a.port_base, a.members);
    }
    match layout::read(&member_dir(&a.dir, 1)) {
        Ok(v) => {
            if v.members != members {
                bail!(
                    "{} holds a nameservice with members {:?}; start it with the same --members/--port-base, or use another --dir",
                    a.dir.display(),
                    v.members
                );
            }
            say!(
                "Restarting nameservice ns1 of cluster {} from {}",
                v.cluster_id,
                a.dir.display()
            );
        }
        Err(layout::LayoutError::NotFormatted { .. }) => format_all(&a, &members)?,
        Err(e) => bail!("{e}"),
    }
    for i in members.keys() {
        if let Ok(p) = std::fs::read_to_string(pid_file(&a.dir, *i)) {
            if let Ok(pid) = p.trim().parse::<i32>() {
                if alive(pid)
                    && std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.contains("metaserver"))
                {
                    bail!("member {i} is still running (pid {pid}); stop it first");
                }
            }
        }
    }
    let exe = std::env::current_exe().context("find the raftfs binary")?;
    let mut children = Vec::new();
    for i in members.keys() {
        let log_path = a.dir.join("ns1").join(format!("m{i}.log"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .with_context(|| format!("open {}", log_path.display()))?;
        let child = tokio::process::Command::new(&exe)
            .arg("metaserver")
            .arg("--dir")
            .arg(member_dir(&a.dir, *i))
            .arg("--id")
            .arg(i.to_string())
            .arg("--store")
            .arg(&a.store)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(false)
            .spawn()
            .with_context(|| format!("start member {i}"))?;
        let pid = child.id().context("member pid")?;
        std::fs::write(pid_file(&a.dir, *i), format!("{pid}\n"))?;
        say!(
            "  member {i}: pid {pid}, listening on {}, log {}",
            members[i],
            log_path.display()
        );
        children.push((*i, pid as i32, child));
    }
    let fs = format!("raftfs://{}", members.values().cloned().collect::<Vec<_>>().join(","));
    wait_ready(&fs).await?;
    say!("Nameservice ns1 is serving. Use it with:");
    say!("  --fs {fs}");
    say!("  export RAFTFS_FS={fs}");
    if a.detach {
        return Ok(());
    }
    say!("Press Ctrl-C to stop every member.");
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    say!("Stopping...");
    for (_, pid, _) in &children {
        signal(*pid, libc::SIGTERM);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_millis(STOP_GRACE_MS);
    for (i, pid, child) in &mut children {
        match tokio::time::timeout_at(deadline, child.wait()).await {
            Ok(_) => {}
            Err(_) => {
                eprintln!("member {i} (pid {pid}) did not stop in time: killing it");
                signal(*pid, libc::SIGKILL);
                let _ = child.wait().await;
            }
        }
        let _ = std::fs::remove_file(pid_file(&a.dir, *i));
    }
    say!("Stopped.");
    Ok(())
}

async fn wait_ready(fs: &str) -> anyhow::Result<()> {
    let identity = raftfs_client::Identity::resolve(None);
    let opts = raftfs_client::ClientOptions {
        call_deadline_ms: READY_TIMEOUT_MS,
        ..Default::default()
    };
    let client = raftfs_client::FileSystem::connect(fs, identity, opts)?;
    client
        .get_file_status("/")
        .await
        .context("wait for the nameservice to serve (see the member logs)")?;
    Ok(())
}
