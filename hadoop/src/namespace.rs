//! [`HadoopNamespace`]: what the IPC server runs ClientNamenodeProtocol
//! calls against (a member's own nameservice).

use std::future::Future;
use std::pin::Pin;

use raftfs_proto::{AdminOp, AdminResult, CallCtx, FsError, Op, OpResult};

/// A namespace call's future.
pub type CallFuture<'a> = Pin<Box<dyn Future<Output = Result<OpResult, FsError>> + Send + 'a>>;
/// [`HadoopNamespace::sync_state`]'s future.
pub type SyncFuture<'a> = Pin<Box<dyn Future<Output = Result<(), FsError>> + Send + 'a>>;
/// An administrative call's future.
pub type AdminFuture<'a> = Pin<Box<dyn Future<Output = Result<AdminResult, FsError>> + Send + 'a>>;

/// Who a connection acts for, as the server authenticated it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpcCaller {
    pub user: String,
    /// The peer's IP address (for the audit log).
    pub ip: String,
}

/// What `getHAServiceState` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaState {
    /// The leader: it serves every call.
    Active,
    /// A follower: it serves the reads of clients that say which state
    /// they have seen (HDFS's observer reads, `ObserverReadProxyProvider`)
    /// once it has applied that state, and answers everything else with
    /// `StandbyException`.
    Observer,
    /// A member that serves nothing.
    Standby,
}

/// Where a DataNode serves Hadoop's data transfer and HTTP (HOST:PORT;
/// empty when it serves none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatanodeEndpoints {
    pub xfer_addr: String,
    pub http_addr: String,
    /// One of its storages (`DS-...`), which Hadoop's clients carry
    /// along with each location.
    pub storage_id: String,
}

/// What `getServerDefaults` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerDefaults {
    pub block_size_bytes: u64,
    pub replication: u16,
    pub bytes_per_checksum: u32,
}

/// What `getFsStats` answers: the live DataNodes' space, and the block
/// manager's counts (HDFS's `FSNamesystem.getStats`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FsStats {
    pub capacity_bytes: u64,
    pub used_bytes: u64,
    pub remaining_bytes: u64,
    /// Complete blocks with fewer good replicas than their replication.
    pub under_replicated_blocks: u64,
    /// Blocks with a corrupt replica.
    pub corrupt_blocks: u64,
    /// Complete blocks with no good replica on a live DataNode.
    pub missing_blocks: u64,
    /// Replicas queued for deletion.
    pub pending_deletion_blocks: u64,
}

pub trait HadoopNamespace: Send + Sync + 'static {
    /// Run `op` for `caller` under `ctx`'s client id and call id (whose
    /// user and groups the namespace fills in: groups are resolved by the
    /// server, never taken from the client). A member that does not lead
    /// answers `NotLeader`, which Hadoop clients know as `StandbyException`,
    /// except for a read whose client has seen state `seen` (its request
    /// header's `stateId`): a follower serves that once it has applied it.
    fn call<'a>(&'a self, caller: &'a IpcCaller, ids: CallCtx, op: Op, seen: Option<u64>) -> CallFuture<'a>;

    /// As the leader, confirm the leadership and wait until every write
    /// acknowledged before this call is applied (a linearizable read
    /// index), so the `stateId` of the answer covers them (`msync`);
    /// `NotLeader` elsewhere.
    fn sync_state(&self) -> SyncFuture<'_>;

    /// The state this member has applied (its applied log index): every
    /// answer's `stateId`, which observer-read clients send back.
    fn state_id(&self) -> u64;

    /// Run the administrative `op` for `caller` (the namespace checks the
    /// superuser privilege; a member that does not lead answers `NotLeader`).
    fn admin<'a>(&'a self, caller: &'a IpcCaller, ids: CallCtx, op: AdminOp) -> AdminFuture<'a>;

    /// The cluster's space and block counts (`NotLeader` off the leader).
    fn fs_stats(&self) -> Result<FsStats, FsError>;

    /// Whether the namespace is in safe mode (`NotLeader` off the leader);
    /// anyone may ask, as in HDFS.
    fn in_safe_mode(&self) -> Result<bool, FsError>;

    /// Whether this member serves calls now.
    fn ha_state(&self) -> HaState;

    /// The defaults a client creates files with.
    fn server_defaults(&self) -> ServerDefaults;

    /// Where registered DataNode `uuid` serves Hadoop's data transfer.
    fn datanode_endpoints(&self, uuid: &str) -> Option<DatanodeEndpoints>;

    /// The block pool of this nameservice.
    fn block_pool_id(&self) -> String;

    /// A path naming the file block `block_id` belongs to
    /// (`/.reserved/.inodes/<id>`), for the pipeline calls that name only
    /// a block; `None` for a block no file has.
    fn file_of_block(&self, block_id: u64) -> Option<String>;
}
