//! `raftfs bench nnmemory`: resident memory per file of the memory store
//! (HDFS needs ~150 bytes of heap per inode).
//!
//! Creates `--files` closed files (`--files-per-dir` per directory) in an
//! engine over `--store memory` and reports the growth of the process's
//! resident set divided by the inodes created. Log time advances with each
//! create so the retry table stays at its steady-state size.

use clap::Args;

use raftfs_metaserver::exec::{Engine, ExecMode};
use raftfs_metaserver::namespace::RETRY_CACHE_EXPIRY_MS;

/// Creates whose retry records are still inside the expiry window at any time.
const RETRY_WINDOW_OPS: i64 = 1000;
use raftfs_metaserver::server::member::now_ms;
use raftfs_metaserver::store::MemStore;
use raftfs_proto::{CallCtx, Op, Permission};

use crate::names::Names;
use crate::target::{bench_format_info, BENCH_USER};

#[derive(Args, Debug, Clone)]
pub struct MemArgs {
    #[arg(long, default_value_t = 1_000_000)]
    pub files: u64,
    #[arg(long = "files-per-dir", alias = "filesPerDir", default_value_t = 1000)]
    pub files_per_dir: u64,
}

fn rss_bytes() -> anyhow::Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("short /proc/self/statm"))?
        .parse()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Ok(pages * page.max(1) as u64)
}

pub fn run(a: MemArgs) -> anyhow::Result<()> {
    let before = rss_bytes()?;
    let engine =
        Engine::open(MemStore::new(), &bench_format_info(), ExecMode::default()).map_err(|e| anyhow::anyhow!("{e}"))?;
    let names = Names::new("/mem", a.files, a.files_per_dir);
    let mut ctx = CallCtx {
        client_id: "nnmemory".into(),
        call_id: 0,
        user: BENCH_USER.into(),
        groups: vec![],
        routed_by: 0,
    };
    // Log time advances so that the retry table holds only the last
    // RETRY_WINDOW_OPS creates, as it would on a cluster that created these
    // files over hours: memory per file is then the namespace's, not the
    // retry cache's (which is bounded by the call rate, not the file count).
    let step = (RETRY_CACHE_EXPIRY_MS / RETRY_WINDOW_OPS).max(1);
    let start = now_ms();
    for n in 0..a.files {
        let t = start + n as i64 * step;
        let path = names.file(n);
        ctx.call_id += 1;
        let op = Op::Create {
            path: path.clone(),
            permission: Permission(0o644),
            overwrite: false,
            create_parent: true,
            replication: 3,
            block_size: 128 * 1024 * 1024,
        };
        engine
            .execute(&ctx, &op, t)
            .map_err(|e| anyhow::anyhow!("create {path}: {e}"))?;
        ctx.call_id += 1;
        engine
            .execute(&ctx, &Op::Complete { path, last: None }, t)
            .map_err(|e| anyhow::anyhow!("complete: {e}"))?;
    }
    let after = rss_bytes()?;
    let dirs = a.files.div_ceil(a.files_per_dir.max(1));
    let inodes = a.files + dirs;
    println!("files = {}", a.files);
    println!("directories (approx.) = {dirs}");
    println!("RSS before = {before} bytes, after = {after} bytes");
    println!(
        "bytes per inode = {:.1}",
        (after.saturating_sub(before)) as f64 / inodes as f64
    );
    Ok(())
}
