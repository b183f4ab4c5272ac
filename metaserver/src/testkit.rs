//! Helpers for tests and benchmarks that run members in-process.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use raftfs_proto::{CallCtx, FsError, Op, OpResult};

use crate::exec::ExecMode;
use crate::server::layout::{VersionFile, LAYOUT_VERSION};
use crate::server::{format_member, Member, MemberConfig, RaftTimings, StoreKind};

/// The identity of a namespace formatted for an in-process test:
/// `superuser` owns the root, whose mtime is `time_ms`.
pub fn test_format_info(superuser: &str, time_ms: i64) -> crate::namespace::FormatInfo {
    crate::namespace::FormatInfo {
        cluster_id: "CID-test".into(),
        namespace_id: 1,
        block_pool_id: "BP-test".into(),
        nameservice: "ns1".into(),
        superuser: superuser.into(),
        supergroup: crate::namespace::DEFAULT_SUPERGROUP.into(),
        time_ms,
    }
}

/// Raft timings for tests: quick elections on loopback.
pub fn fast_timings() -> RaftTimings {
    RaftTimings {
        heartbeat_interval_ms: 50,
        election_timeout_min_ms: 200,
        election_timeout_max_ms: 400,
        snapshot_logs_since_last: 100_000,
        logs_kept_after_snapshot: 1000,
        snapshot_interval_secs: 0,
    }
}

/// A VERSION for member `id` of a test nameservice with `members`.
pub fn test_version(id: u64, members: &BTreeMap<u64, String>, superuser: &str) -> VersionFile {
    VersionFile {
        layout_version: LAYOUT_VERSION,
        node_type: crate::server::layout::NODE_TYPE_METASERVER.into(),
        cluster_id: "CID-test".into(),
        namespace_id: 42,
        block_pool_id: "BP-42-127.0.0.1-0".into(),
        nameservice: "ns1".into(),
        member_id: id,
        members: members.clone(),
        superuser: superuser.into(),
        ctime_ms: 0,
        join: false,
    }
}

/// Format and open a single-member nameservice in `dir` (`--exec` the
/// default), and wait until it serves calls.
pub async fn single_member(dir: &Path, store: StoreKind, superuser: &str) -> Result<Member, FsError> {
    single_member_with(
        dir,
        store,
        ExecMode::default(),
        superuser,
        crate::exec::batcher::MAX_OPS_PER_ENTRY,
    )
    .await
}

/// As [`single_member`], in execution mode `exec`, packing at most
/// `max_ops_per_entry` writes per log entry.
pub async fn single_member_with(
    dir: &Path,
    store: StoreKind,
    exec: ExecMode,
    superuser: &str,
    max_ops_per_entry: usize,
) -> Result<Member, FsError> {
    let members = BTreeMap::from([(1u64, "127.0.0.1:1".to_string())]);
    format_member(dir, &test_version(1, &members, superuser))?;
    open_single_member(dir, store, exec, max_ops_per_entry).await
}

/// Open (or reopen, after a shutdown) the single-member nameservice
/// formatted in `dir`, and wait until it serves calls.
pub async fn open_single_member(
    dir: &Path,
    store: StoreKind,
    exec: ExecMode,
    max_ops_per_entry: usize,
) -> Result<Member, FsError> {
    let cfg = MemberConfig {
        dir: dir.to_path_buf(),
        member_id: 1,
        store,
        timings: fast_timings(),
        expect_cluster_id: None,
        max_ops_per_entry,
        exec,
        health: crate::server::health::HealthConfig::default(),
        blocks: crate::blocks::BlockManagerConfig::default(),
        lease_hard_limit_ms: crate::server::DEFAULT_LEASE_HARD_LIMIT_MS,
        group_mapping: None,
        // In-process: nothing is served over the network.
        security: raftfs_trust::NodeSecurity::insecure(),
        client_auth: raftfs_trust::ClientAuth::Simple,
        delegation: Default::default(),
        audit: false,
    };
    // A member shut down in this process releases its RocksDB lock file
    // only once its Raft tasks have wound down (they end after `shutdown`
    // returns); a new process never meets this.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(REOPEN_WAIT_MS);
    let member = loop {
        match Member::open(&cfg).await {
            Err(FsError::Storage(m)) if m.contains("lock hold by current process") => {
                if tokio::time::Instant::now() >= deadline {
                    return Err(FsError::Storage(m));
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            r => break r?,
        }
    };
    wait_serving(&member).await?;
    Ok(member)
}

/// How long [`open_single_member`] waits for a member shut down in this
/// process to release its store.
pub const REOPEN_WAIT_MS: u64 = 10_000;

/// How long [`wait_serving`] waits (a restart at millions of inodes included).
pub const SERVING_WAIT_MS: u64 = 60_000;

/// Retry a harmless read until the member answers it (leader elected,
/// namespace formatted), for at most [`SERVING_WAIT_MS`].
pub async fn wait_serving(member: &Member) -> Result<(), FsError> {
    let ctx = CallCtx {
        client_id: "wait".into(),
        call_id: 0,
        user: "probe".into(),
        groups: vec![],
        routed_by: 0,
    };
    let deadline = tokio::time::Instant::now() + Duration::from_millis(SERVING_WAIT_MS);
    loop {
        match member.call(ctx.clone(), Op::GetFileInfo { path: "/".into() }).await {
            Ok(OpResult::Status(Some(_))) => return Ok(()),
            Ok(other) => return Err(FsError::Internal(format!("root lookup returned {other:?}"))),
            Err(e) if e.is_retryable() && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) => return Err(e),
        }
    }
}
