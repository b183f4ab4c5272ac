//! The namespace engine: HDFS namespace semantics over a [`Store`](crate::store::Store).
//!
//! Every write is two pure steps (DESIGN.md §4): [`plan()`] reads a view of
//! committed state and produces a [`Delta`]; [`Overlay::stage`] applies the
//! delta with guard checks. [`execute_write`] puts the two together with the
//! replicated retry cache (DESIGN.md §5). In `--exec apply` mode the Raft
//! state machine calls it for each op of each committed entry, in log order.
//!
//! Nothing in this module reads a clock, a random source, or does I/O other
//! than through the view: every replica computes the same bytes. A store
//! error ([`FsError::Storage`]) is the one non-deterministic outcome; callers
//! on the apply path treat it as fatal.

pub mod apply;
mod attrs;
pub mod command;
mod concat;
pub mod data;
pub mod delegation;
pub mod delta;
pub mod overlay;
pub mod ownership;
pub mod permission;
pub mod plan;
pub mod read;
pub mod reclaim;
mod rename;
pub mod resolve;
mod truncate;

use serde::{Deserialize, Serialize};

use raftfs_proto::limits::{MAX_GROUPS_PER_CALLER, MAX_PRINCIPAL_LEN_BYTES};
use raftfs_proto::{codec, CallCtx, FsError, Op, OpResult, Permission};

pub use apply::{Applier, META_LAST_TIME};
pub use command::{Command, PlannedWrite};
pub use delta::{Delta, Mutation};
pub use overlay::{
    Overlay, FIRST_BLOCK_ID, FIRST_GEN_STAMP, META_NEXT_BLOCK_ID, META_NEXT_GEN_STAMP, META_NEXT_INODE_ID,
};
pub use plan::{check_principal, plan, plan_on_leader, IdSource, LeaderEnv, PendingUsage, MAX_LEADER_WRITES_IN_FLIGHT};
pub use read::read;
pub use reclaim::{plan_reclaim_write, ReclaimCursor, MAX_RECLAIM_INODES_PER_ENTRY};

use crate::inode::{Inode, InodeId, DETACHED_ID, FIRST_ALLOCATED_ID, ROOT_ID};
use crate::store::{ReadView, RetryKey, RetryRecord, StoreError, WriteBatch};

/// Meta key holding the bincode of [`FormatInfo`].
pub const META_FORMAT: &str = "format";
/// Meta key holding the bincode of the set of DataNodes to decommission.
pub const META_DECOMMISSION: &str = "decommission";
/// Most DataNodes that may be decommissioning at once.
pub const MAX_DECOMMISSIONING_NODES: usize = 10_000;
/// Longest accepted client id, in bytes.
pub const MAX_CLIENT_ID_LEN_BYTES: usize = 128;
/// How long the retry table keeps a call's first result (HDFS
/// `dfs.namenode.retrycache.expirytime.millis`, 10 minutes), in log time.
pub const RETRY_CACHE_EXPIRY_MS: i64 = 600_000;
/// Most retry records one log entry (or one engine batch) expires.
pub const MAX_RETRY_EXPIRIES_PER_ENTRY: usize = 1024;
/// Most records the retry table keeps. HDFS bounds its retry cache too, by a
/// share of the heap (`dfs.namenode.retrycache.heap.percent`, 3%). Without a
/// bound the table held every write of the last 10 minutes: at 30k writes/s
/// that is 18M records, ~7 GB in the memory store. Past the bound the oldest
/// records go first, as they would a little later by age; a client retrying
/// a call whose record went re-runs it, as in HDFS.
pub const MAX_RETRY_RECORDS: u64 = 1 << 21;
/// Meta key holding how many records the retry table has (u64 LE). A store
/// from before the key counts from 0 when it first writes: its older records
/// still go by age, and the count never goes below 0.
pub const META_RETRY_RECORDS: &str = "retry_records";
/// HDFS's default supergroup name (`dfs.permissions.superusergroup`).
pub const DEFAULT_SUPERGROUP: &str = "supergroup";

/// Identity of a formatted namespace; the first log entry carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormatInfo {
    pub cluster_id: String,
    pub namespace_id: u64,
    pub block_pool_id: String,
    pub nameservice: String,
    /// The user who ran `format`: the superuser.
    pub superuser: String,
    pub supergroup: String,
    /// Log time of the format, the root's mtime.
    pub time_ms: i64,
}

/// What planning needs to know about the namespace besides its contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NsConfig {
    pub superuser: String,
    pub supergroup: String,
}

impl From<&FormatInfo> for NsConfig {
    fn from(f: &FormatInfo) -> Self {
        NsConfig {
            superuser: f.superuser.clone(),
            supergroup: f.supergroup.clone(),
        }
    }
}

/// The format record in `view`, if the namespace is formatted.
pub fn format_info<V: ReadView + ?Sized>(view: &V) -> Result<Option<FormatInfo>, StoreError> {
    match view.meta(META_FORMAT)? {
        None => Ok(None),
        Some(raw) => bincode::deserialize(&raw).map(Some).map_err(|e| StoreError::Corrupt {
            table: "meta",
            detail: format!("format record: {e}"),
        }),
    }
}

/// Writes that turn an empty store into a formatted namespace: the root
/// (owned by the superuser, group supergroup, 755) and the counters.
pub fn format_batch(info: &FormatInfo) -> WriteBatch {
    let mut b = WriteBatch::default();
    let root = Inode::new_dir(
        ROOT_ID,
        ROOT_ID,
        Permission::new(0o755),
        &info.superuser,
        &info.supergroup,
        info.time_ms,
    );
    b.inodes.insert(ROOT_ID, Some(root));
    b.inodes.insert(
        DETACHED_ID,
        Some(reclaim::detached_dir(&info.superuser, &info.supergroup, info.time_ms)),
    );
    b.meta.insert(
        META_FORMAT.into(),
        Some(bincode::serialize(info).expect("serialize format info")),
    );
    for (key, first) in [
        (META_NEXT_INODE_ID, FIRST_ALLOCATED_ID),
        (META_NEXT_BLOCK_ID, FIRST_BLOCK_ID),
        (META_NEXT_GEN_STAMP, FIRST_GEN_STAMP),
    ] {
        b.meta.insert(key.into(), Some(first.to_le_bytes().to_vec()));
    }
    b
}

/// The u64 counter (inode id, block id, generation stamp) under meta `key`.
pub fn read_counter<V: ReadView + ?Sized>(view: &V, key: &str) -> Result<u64, StoreError> {
    read_optional_counter(view, key)?.ok_or_else(|| StoreError::Corrupt {
        table: "meta",
        detail: format!("{key} missing (store not formatted)"),
    })
}

/// The u64 under meta `key`, if the key is there.
pub(crate) fn read_optional_counter<V: ReadView + ?Sized>(view: &V, key: &str) -> Result<Option<u64>, StoreError> {
    let Some(raw) = view.meta(key)? else {
        return Ok(None);
    };
    let bytes: [u8; 8] = raw.as_slice().try_into().map_err(|_| StoreError::Corrupt {
        table: "meta",
        detail: format!("{key} is not 8 bytes"),
    })?;
    Ok(Some(u64::from_le_bytes(bytes)))
}

pub fn next_inode_id<V: ReadView + ?Sized>(view: &V) -> Result<InodeId, StoreError> {
    read_counter(view, META_NEXT_INODE_ID)
}

/// DataNodes an operator asked to decommission (uuid, HOST:PORT or host name).
pub fn decommissioned<V: ReadView + ?Sized>(view: &V) -> Result<std::collections::BTreeSet<String>, StoreError> {
    match view.meta(META_DECOMMISSION)? {
        None => Ok(Default::default()),
        Some(raw) => bincode::deserialize(&raw).map_err(|e| StoreError::Corrupt {
            table: "meta",
            detail: format!("decommission set: {e}"),
        }),
    }
}

/// Who holds the file at `path` open, if it is a file being written.
pub fn lease_holder_of<V: ReadView + ?Sized>(view: &V, path: &str) -> Result<Option<String>, FsError> {
    let r = resolve::resolve(view, crate::path::FsPath::parse(path)?)?;
    Ok(r.target().and_then(|t| t.lease_holder().map(str::to_string)))
}

/// Check the caller identity of a request (it comes from the network).
pub fn check_ctx(ctx: &CallCtx) -> Result<(), FsError> {
    if ctx.client_id.is_empty() || ctx.client_id.len() > MAX_CLIENT_ID_LEN_BYTES || ctx.client_id.contains('\0') {
        return Err(FsError::InvalidArgument(format!(
            "client id must be 1..{MAX_CLIENT_ID_LEN_BYTES} bytes without NUL"
        )));
    }
    plan::check_principal(&ctx.user).map_err(|_| {
        FsError::AccessControl(format!(
            "unknown or invalid user {:?}: a user name is 1..{MAX_PRINCIPAL_LEN_BYTES} bytes without ':', '/' or control characters",
            ctx.user
        ))
    })?;
    if ctx.groups.len() > MAX_GROUPS_PER_CALLER {
        return Err(FsError::InvalidArgument(format!(
            "more than {MAX_GROUPS_PER_CALLER} groups"
        )));
    }
    for g in &ctx.groups {
        plan::check_principal(g)?;
    }
    Ok(())
}

/// Writes whose first successful result the retry table keeps, so a call
/// retried after its reply was lost (a failover) is answered, not re-run.
/// Every write whose re-execution could answer differently is here, even
/// the ones HDFS marks `@Idempotent` (setPermission, setOwner, setTimes,
/// setReplication, complete): re-run after another client deleted the path,
/// they would report FileNotFound for a change that was made, which the
/// fault harness's checker caught as a linearizability violation.
/// Exhaustive, so a new op has to decide.
pub fn is_cached_in_retry_table(op: &Op) -> bool {
    match op {
        Op::Create { .. }
        | Op::Complete { .. }
        | Op::Rename { .. }
        | Op::Rename2 { .. }
        | Op::Delete { .. }
        | Op::Mkdirs { .. }
        | Op::SetPermission { .. }
        | Op::SetOwner { .. }
        | Op::SetReplication { .. }
        | Op::SetTimes { .. }
        | Op::SetQuota { .. }
        | Op::AddBlock { .. }
        | Op::AbandonBlock { .. }
        | Op::UpdateBlockForPipeline { .. }
        | Op::UpdatePipeline { .. }
        | Op::Append { .. }
        | Op::RecoverLease { .. }
        | Op::CommitBlockSynchronization { .. }
        | Op::SetDatanodeAdmin { .. }
        | Op::GetDelegationToken { .. }
        | Op::RenewDelegationToken { .. }
        | Op::CancelDelegationToken { .. }
        | Op::AddDelegationKey { .. }
        | Op::ExpireDelegationTokens { .. }
        | Op::SetOwnership { .. }
        | Op::Concat { .. }
        | Op::Truncate { .. } => true,
        // Renewing a lease again is the same as renewing it once; reads are not logged.
        Op::RenewLease
        | Op::GetFileInfo { .. }
        | Op::GetListing { .. }
        | Op::GetContentSummary { .. }
        | Op::GetBlockLocations { .. }
        | Op::GetAdditionalDatanode { .. } => false,
    }
}

/// Plan and stage one write on `overlay`, answering a retried call from the
/// retry table. A deterministic failure leaves `overlay` untouched.
pub fn execute_write<V: ReadView + ?Sized>(
    cfg: &NsConfig,
    overlay: &mut Overlay<'_, V>,
    ctx: &CallCtx,
    op: &Op,
    time_ms: i64,
) -> Result<OpResult, FsError> {
    check_ctx(ctx)?;
    let cached = is_cached_in_retry_table(op);
    let key = (ctx.client_id.clone(), ctx.call_id);
    if cached {
        if let Some(rec) = live_retry(overlay, &key, time_ms)? {
            return codec::decode(&rec.result, "retry record");
        }
    }
    let delta = plan(cfg, overlay, ctx, op, time_ms)?;
    overlay.stage(&delta.mutations, time_ms)?;
    if cached {
        record_retry(overlay, key, time_ms, &delta.result)?;
    }
    Ok(delta.result)
}

/// The retry record of call `key` if it is still inside the retry window at
/// log time `now_ms`. Expiry drops records once per log entry, and in
/// `--exec leader` a failed write makes no entry, so a record past the
/// window may or may not have been dropped yet: it counts as gone either
/// way, and both modes answer a late retry alike.
pub fn live_retry<V: ReadView + ?Sized>(
    view: &V,
    key: &RetryKey,
    now_ms: i64,
) -> Result<Option<RetryRecord>, StoreError> {
    Ok(view
        .retry(key)?
        .filter(|r| r.time_ms >= now_ms.saturating_sub(RETRY_CACHE_EXPIRY_MS)))
}

/// Keep `result` as the first result of call `key`, applied at log time `time_ms`.
pub(crate) fn record_retry<V: ReadView + ?Sized>(
    overlay: &mut Overlay<'_, V>,
    key: RetryKey,
    time_ms: i64,
    result: &OpResult,
) -> Result<(), FsError> {
    let result = codec::encode(result).map_err(|e| FsError::Internal(e.to_string()))?;
    // A call re-run after its record left the window (but before expiry
    // dropped it) overwrites it: the table holds no more records than before.
    if !overlay.put_retry(key, RetryRecord { time_ms, result })? {
        let n = retry_records(overlay)?;
        set_retry_records(overlay, n + 1);
    }
    Ok(())
}

/// How many records the retry table holds (see [`META_RETRY_RECORDS`]).
pub fn retry_records<V: ReadView + ?Sized>(view: &V) -> Result<u64, StoreError> {
    Ok(read_optional_counter(view, META_RETRY_RECORDS)?.unwrap_or(0))
}

fn set_retry_records<V: ReadView + ?Sized>(overlay: &mut Overlay<'_, V>, n: u64) {
    overlay.put_meta(META_RETRY_RECORDS, n.to_le_bytes().to_vec());
}

/// Drop retry records older than the expiry window at log time `now_ms`,
/// and the oldest ones past [`MAX_RETRY_RECORDS`]; at most
/// [`MAX_RETRY_EXPIRIES_PER_ENTRY`]. Called once per log entry, so the
/// records dropped depend only on the log, never on how entries were batched:
/// every replica answers a late retry the same way. Returns how many it dropped.
pub fn expire_retry<V: ReadView + ?Sized>(overlay: &mut Overlay<'_, V>, now_ms: i64) -> Result<usize, StoreError> {
    expire_retry_bounded(overlay, now_ms, MAX_RETRY_RECORDS)
}

/// [`expire_retry`] with the table bounded to `max_records` (tests use a small bound).
pub fn expire_retry_bounded<V: ReadView + ?Sized>(
    overlay: &mut Overlay<'_, V>,
    now_ms: i64,
    max_records: u64,
) -> Result<usize, StoreError> {
    let mut expired = overlay.retry_older_than(
        now_ms.saturating_sub(RETRY_CACHE_EXPIRY_MS),
        MAX_RETRY_EXPIRIES_PER_ENTRY,
    )?;
    let records = retry_records(overlay)?;
    // Records are taken oldest first, by (time, key), in both stores: the
    // ones over the bound are a prefix of the same order, so the longer of
    // the two lists holds the other.
    let over = usize::try_from(records.saturating_sub(max_records))
        .unwrap_or(usize::MAX)
        .min(MAX_RETRY_EXPIRIES_PER_ENTRY);
    if over > expired.len() {
        expired = overlay.retry_older_than(i64::MAX, over)?;
    }
    let n = expired.len();
    for (time_ms, key) in expired {
        overlay.delete_retry(key, time_ms);
    }
    if n > 0 {
        set_retry_records(overlay, records.saturating_sub(n as u64));
    }
    Ok(n)
}
