//! `raftfs bench snapshot`: the checkpoint figures at a large namespace.
//!
//! Fills a single-member nameservice (in-process, real Raft log with fsync,
//! `--store`) with `--inodes` files in directories of `--files-per-dir`,
//! then measures
//! * **take**: openraft's snapshot of the state machine (a RocksDB
//!   checkpoint, or the memory store's image file, plus checksumming every
//!   file for the manifest), from the trigger to the new snapshot showing in
//!   the metrics;
//! * **install**: the snapshot streamed as it goes over the network (the
//!   same chunk reader and writer, minus the socket) into a new member's
//!   directory, then installed by that member's state machine over an empty
//!   store (RocksDB: linked in as a new database; memory: the image
//!   decoded);
//! * **restart to serving**: the member shut down and opened again on its
//!   directory, until a getFileInfo of one of the files is answered (for
//!   RocksDB the namespace is on disk; for memory it is loaded from the
//!   latest snapshot).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use openraft::async_runtime::WatchReceiver;
use openraft::storage::RaftStateMachine;

use raftfs_metaserver::blocks::{BlockManager, BlockManagerConfig};
use raftfs_metaserver::exec::ExecMode;
use raftfs_metaserver::raft::network::SNAPSHOT_CHUNK_BYTES;
use raftfs_metaserver::raft::{snapshot_stream, NsStateMachine, Snapshots};
use raftfs_metaserver::server::{Member, StoreKind};
use raftfs_metaserver::testkit;
use raftfs_proto::{CallCtx, Op, OpResult, Permission};

use crate::target::open_store;

#[derive(Args, Debug, Clone)]
pub struct SnapshotArgs {
    #[arg(long, default_value_t = 1_000_000)]
    pub inodes: u64,
    #[arg(long, default_value_t = 1000)]
    pub files_per_dir: u64,
    #[arg(long, default_value = "rocksdb")]
    pub store: String,
    /// Concurrent callers filling the namespace.
    #[arg(long, default_value_t = 64)]
    pub callers: u64,
}

/// Most ops a member's batcher packs per log entry during the fill.
const FILL_OPS_PER_ENTRY: usize = 256;
/// How long to wait for a snapshot covering the fill.
const SNAPSHOT_WAIT_MS: u64 = 600_000;
/// How long one trigger is given before the next.
const SNAPSHOT_RETRIGGER_MS: u64 = 2_000;

fn ctx(worker: u64, call: u64) -> CallCtx {
    CallCtx {
        client_id: format!("snapbench-{worker}"),
        call_id: call,
        user: "bench".into(),
        groups: vec!["supergroup".into()],
        routed_by: 0,
    }
}

fn file_path(i: u64, per_dir: u64) -> String {
    format!("/snap/d{}/f{}", i / per_dir, i % per_dir)
}

async fn fill(member: &Arc<Member>, a: &SnapshotArgs) -> anyhow::Result<()> {
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for w in 0..a.callers {
        let (member, next, per_dir, total) = (member.clone(), next.clone(), a.files_per_dir, a.inodes);
        tasks.push(tokio::spawn(async move {
            let mut call = 0u64;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return anyhow::Ok(());
                }
                let path = file_path(i, per_dir);
                call += 1;
                let created = member
                    .call(
                        ctx(w, call),
                        Op::Create {
                            path: path.clone(),
                            permission: Permission::new(0o644),
                            overwrite: false,
                            create_parent: true,
                            replication: 3,
                            block_size: 128 << 20,
                        },
                    )
                    .await;
                created.with_context(|| format!("create {path}"))?;
                call += 1;
                member
                    .call(
                        ctx(w, call),
                        Op::Complete {
                            path: path.clone(),
                            last: None,
                        },
                    )
                    .await
                    .with_context(|| format!("complete {path}"))?;
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

fn applied(member: &Member) -> u64 {
    member
        .raft
        .metrics()
        .borrow_watched()
        .last_applied
        .map_or(0, |l| l.index)
}

pub async fn run(a: SnapshotArgs) -> anyhow::Result<()> {
    let kind: StoreKind = a.store.parse().map_err(anyhow::Error::msg)?;
    if a.files_per_dir == 0 {
        bail!("--files-per-dir must be positive");
    }
    let root = tempfile::tempdir()?;
    let dir = root.path().join("m1");
    std::fs::create_dir_all(&dir)?;
    let member =
        Arc::new(testkit::single_member_with(&dir, kind, ExecMode::default(), "bench", FILL_OPS_PER_ENTRY).await?);
    println!(
        "# raftfs snapshot: {} files in directories of {}, store={}",
        a.inodes, a.files_per_dir, a.store
    );
    let started = Instant::now();
    fill(&member, &a).await?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "fill: {} files in {secs:.1} s ({:.0} files/s)",
        a.inodes,
        a.inodes as f64 / secs
    );

    // Take.
    let target = applied(&member);
    let started = Instant::now();
    // A trigger while a snapshot is being built (the policy's, during the
    // fill) is dropped, and that one may end below `target`: trigger again
    // until a snapshot covers it.
    let deadline = Instant::now() + Duration::from_millis(SNAPSHOT_WAIT_MS);
    loop {
        member.raft.trigger().snapshot().await.context("trigger snapshot")?;
        let covered = member
            .raft
            .wait(Some(Duration::from_millis(SNAPSHOT_RETRIGGER_MS)))
            .metrics(|m| m.snapshot.is_some_and(|s| s.index >= target), "snapshot taken")
            .await
            .is_ok();
        if covered {
            break;
        }
        if Instant::now() > deadline {
            bail!("no snapshot reached log index {target} within {SNAPSHOT_WAIT_MS} ms");
        }
    }
    let take = started.elapsed();
    let taken = Snapshots::open(&dir)?
        .latest()?
        .context("no snapshot after the snapshot")?;
    println!(
        "take snapshot: {:.2} s ({:.1} MiB in {} files, log index {target})",
        take.as_secs_f64(),
        taken.manifest.total_bytes() as f64 / (1 << 20) as f64,
        taken.manifest.files.len()
    );

    // Stream into a new member's directory and install there.
    let new_dir = root.path().join("new");
    std::fs::create_dir_all(&new_dir)?;
    let started = Instant::now();
    let store = open_store(kind, &new_dir.join("namespace"))?;
    let mut sm = NsStateMachine::open(
        store,
        Arc::new(BlockManager::new(BlockManagerConfig::default())),
        &new_dir,
    )?;
    let incoming = Snapshots::open(&new_dir)?.incoming()?;
    let meta = taken.manifest.meta.clone();
    let mut writer = snapshot_stream::SnapshotWriter::new(incoming, taken.manifest.clone())?;
    let mut write_error = None;
    snapshot_stream::read_chunks(&taken, SNAPSHOT_CHUNK_BYTES, |chunk| match writer.push(&chunk) {
        Ok(()) => true,
        Err(e) => {
            write_error = Some(e);
            false
        }
    })?;
    if let Some(e) = write_error {
        return Err(e).context("write the streamed snapshot");
    }
    let received = writer.finish()?;
    let streamed = started.elapsed();
    sm.install_snapshot(&meta, received).await.context("install snapshot")?;
    let install = started.elapsed();
    println!(
        "install snapshot on a new member: {:.2} s (streaming {:.2} s)",
        install.as_secs_f64(),
        streamed.as_secs_f64()
    );
    drop(sm);

    // Restart to serving.
    member.shutdown().await;
    drop(member);
    let started = Instant::now();
    let member = testkit::open_single_member(&dir, kind, ExecMode::default(), FILL_OPS_PER_ENTRY).await?;
    let probe = file_path(a.inodes.saturating_sub(1), a.files_per_dir);
    match member.call(ctx(0, 1), Op::GetFileInfo { path: probe.clone() }).await? {
        OpResult::Status(Some(_)) => {}
        other => bail!("after the restart {probe} is {other:?}"),
    }
    let restart = started.elapsed();
    println!("restart to serving: {:.2} s", restart.as_secs_f64());
    member.shutdown().await;
    Ok(())
}
