//! [`HadoopNamespace`]: what the IPC server runs ClientNamenodeProtocol
//! calls against: a member's own nameservice, or a router's federated
//! namespace (many nameservices, each with its own block pool, so an
//! answer says which pool its blocks are in).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use raftfs_proto::{AdminOp, AdminResult, CallCtx, DelegationTokenIdentifier, FsError, Op, OpResult};

use crate::ipc_service::IpcCaller;

/// A namespace call's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    pub result: OpResult,
    /// The block pool of the nameservice that answered (empty when none
    /// did: a router's own answer about its mount table).
    pub block_pool_id: String,
}

/// A namespace call's future.
pub type CallFuture<'a> = Pin<Box<dyn Future<Output = Result<Answered, FsError>> + Send + 'a>>;
/// [`HadoopNamespace::token_password`]'s future.
pub type PasswordFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<u8>, FsError>> + Send + 'a>>;
/// DataNode uuid to where it serves Hadoop's data transfer.
pub type Endpoints = HashMap<String, DatanodeEndpoints>;
/// [`HadoopNamespace::datanode_endpoints`]' future.
pub type EndpointsFuture<'a> = Pin<Box<dyn Future<Output = Endpoints> + Send + 'a>>;
/// [`HadoopNamespace::sync_state`]'s future.
pub type SyncFuture<'a> = Pin<Box<dyn Future<Output = Result<(), FsError>> + Send + 'a>>;
/// An administrative call's future.
pub type AdminFuture<'a> = Pin<Box<dyn Future<Output = Result<AdminResult, FsError>> + Send + 'a>>;

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

/// What `getServerDefaults` answers (the same from every namespace:
/// raftfs's defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerDefaults {
    pub block_size_bytes: u64,
    pub replication: u16,
    pub bytes_per_checksum: u32,
}

impl Default for ServerDefaults {
    /// raftfs's: what its SDK creates files with.
    fn default() -> ServerDefaults {
        use raftfs_proto::limits::{BYTES_PER_CHECKSUM, DEFAULT_BLOCK_SIZE_BYTES, DEFAULT_REPLICATION};
        ServerDefaults {
            block_size_bytes: DEFAULT_BLOCK_SIZE_BYTES,
            replication: DEFAULT_REPLICATION,
            bytes_per_checksum: BYTES_PER_CHECKSUM as u32,
        }
    }
}

pub trait HadoopNamespace: Send + Sync + 'static {
    /// Run `op` for `caller` under `ctx`'s client id and call id (whose
    /// user and groups the namespace fills in: groups are resolved by the
    /// server, never taken from the client). A member that does not lead
    /// answers `NotLeader`, which Hadoop clients know as `StandbyException`,
    /// except for a read whose client has seen state `seen` (its request
    /// header's `stateId`): a follower serves that once it has applied it.
    fn call<'a>(&'a self, caller: &'a IpcCaller, ids: CallCtx, op: Op, seen: Option<u64>) -> CallFuture<'a>;

    /// Run the pipeline op `op` (`UpdateBlockForPipeline` or
    /// `UpdatePipeline`, with an empty path: Hadoop's call names only the
    /// block) on the nameservice whose block pool is `pool`, which finds
    /// the file the block belongs to. A pool no nameservice here has is
    /// refused.
    fn call_in_pool<'a>(&'a self, caller: &'a IpcCaller, ids: CallCtx, pool: &'a str, op: Op) -> CallFuture<'a>;

    /// As the leader, confirm the leadership and wait until every write
    /// acknowledged before this call is applied (a linearizable read
    /// index), so the `stateId` of the answer covers them (`msync`);
    /// `NotLeader` elsewhere.
    fn sync_state(&self) -> SyncFuture<'_>;

    /// The state this member has applied (its applied log index): every
    /// answer's `stateId`, which observer-read clients send back; `None`
    /// from a namespace whose reads are always current (a router's).
    fn state_id(&self) -> Option<u64>;

    /// Run the administrative `op` for `caller`: `DatanodeReport`,
    /// `SafeMode` and `FsStats` (the namespace checks the superuser
    /// privilege where HDFS does; a member that does not lead answers
    /// `NotLeader`).
    fn admin<'a>(&'a self, caller: &'a IpcCaller, ids: CallCtx, op: AdminOp) -> AdminFuture<'a>;

    /// Whether this member serves calls now.
    fn ha_state(&self) -> HaState;

    /// The password of the live delegation token `id` names, for a client
    /// that proves it holds it (SASL TOKEN, under `--auth strong`); why
    /// not for a token this namespace did not issue, cancelled or expired.
    fn token_password<'a>(&'a self, id: &'a DelegationTokenIdentifier) -> PasswordFuture<'a>;

    /// Where the registered DataNodes `uuids` serve Hadoop's data transfer
    /// (a DataNode not known is left out).
    fn datanode_endpoints<'a>(&'a self, uuids: Vec<String>) -> EndpointsFuture<'a>;
}
