//! ClientNamenodeProtocol's requests and answers (hadoop-hdfs-client's
//! `ClientNamenodeProtocol.proto`), those raftfs serves. Requests that
//! carry only a path share [`PathRequest`]; answers that are one bool
//! share [`BoolResponse`]; void requests and answers are [`EmptyMessage`].

use super::hdfs::*;

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetServerDefaultsRequest {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetServerDefaultsResponse {
    #[prost(message, required, tag = "1")]
    pub server_defaults: FsServerDefaults,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetFileInfoRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetFileInfoResponse {
    #[prost(message, optional, tag = "1")]
    pub fs: Option<HdfsFileStatus>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetListingRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(bytes = "vec", required, tag = "2")]
    pub start_after: Vec<u8>,
    #[prost(bool, required, tag = "3")]
    pub need_location: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetListingResponse {
    #[prost(message, optional, tag = "1")]
    pub dir_list: Option<DirectoryListing>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct MkdirsRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(message, required, tag = "2")]
    pub masked: FsPermission,
    #[prost(bool, required, tag = "3")]
    pub create_parent: bool,
    #[prost(message, optional, tag = "4")]
    pub unmasked: Option<FsPermission>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BoolResponse {
    #[prost(bool, required, tag = "1")]
    pub result: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DeleteRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(bool, required, tag = "2")]
    pub recursive: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RenameRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(string, required, tag = "2")]
    pub dst: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Rename2Request {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(string, required, tag = "2")]
    pub dst: String,
    #[prost(bool, required, tag = "3")]
    pub overwrite_dest: bool,
    #[prost(bool, optional, tag = "4")]
    pub move_to_trash: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct EmptyMessage {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SetPermissionRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(message, required, tag = "2")]
    pub permission: FsPermission,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SetOwnerRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(string, optional, tag = "2")]
    pub username: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub groupname: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SetReplicationRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(uint32, required, tag = "2")]
    pub replication: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SetTimesRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(uint64, required, tag = "2")]
    pub mtime: u64,
    #[prost(uint64, required, tag = "3")]
    pub atime: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PathRequest {
    #[prost(string, required, tag = "1")]
    pub path: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetContentSummaryResponse {
    #[prost(message, required, tag = "1")]
    pub summary: ContentSummary,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetQuotaUsageResponse {
    #[prost(message, required, tag = "1")]
    pub usage: QuotaUsage,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SetQuotaRequest {
    #[prost(string, required, tag = "1")]
    pub path: String,
    #[prost(uint64, required, tag = "2")]
    pub namespace_quota: u64,
    #[prost(uint64, required, tag = "3")]
    pub storagespace_quota: u64,
    #[prost(int32, optional, tag = "4")]
    pub storage_type: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RenewLeaseRequest {
    #[prost(string, required, tag = "1")]
    pub client_name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HaServiceStateResponse {
    #[prost(int32, required, tag = "1")]
    pub state: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetFsStatsResponse {
    #[prost(uint64, required, tag = "1")]
    pub capacity: u64,
    #[prost(uint64, required, tag = "2")]
    pub used: u64,
    #[prost(uint64, required, tag = "3")]
    pub remaining: u64,
    #[prost(uint64, required, tag = "4")]
    pub under_replicated: u64,
    #[prost(uint64, required, tag = "5")]
    pub corrupt_blocks: u64,
    #[prost(uint64, required, tag = "6")]
    pub missing_blocks: u64,
    #[prost(uint64, optional, tag = "7")]
    pub missing_repl_one_blocks: Option<u64>,
    #[prost(uint64, optional, tag = "8")]
    pub blocks_in_future: Option<u64>,
    #[prost(uint64, optional, tag = "9")]
    pub pending_deletion_blocks: Option<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetBlockLocationsRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(uint64, required, tag = "2")]
    pub offset: u64,
    #[prost(uint64, required, tag = "3")]
    pub length: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetBlockLocationsResponse {
    #[prost(message, optional, tag = "1")]
    pub locations: Option<LocatedBlocks>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RecoverLeaseRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(string, required, tag = "2")]
    pub client_name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetDatanodeReportRequest {
    #[prost(int32, required, tag = "1")]
    pub report_type: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetDatanodeReportResponse {
    #[prost(message, repeated, tag = "1")]
    pub di: Vec<DatanodeInfo>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SetSafeModeRequest {
    #[prost(int32, required, tag = "1")]
    pub action: i32,
    #[prost(bool, optional, tag = "2")]
    pub checked: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CreateRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(message, required, tag = "2")]
    pub masked: FsPermission,
    #[prost(string, required, tag = "3")]
    pub client_name: String,
    #[prost(uint32, required, tag = "4")]
    pub create_flag: u32,
    #[prost(bool, required, tag = "5")]
    pub create_parent: bool,
    #[prost(uint32, required, tag = "6")]
    pub replication: u32,
    #[prost(uint64, required, tag = "7")]
    pub block_size: u64,
    #[prost(string, optional, tag = "10")]
    pub ec_policy_name: Option<String>,
    #[prost(string, optional, tag = "11")]
    pub storage_policy: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CreateResponse {
    #[prost(message, optional, tag = "1")]
    pub fs: Option<HdfsFileStatus>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AppendRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(string, required, tag = "2")]
    pub client_name: String,
    #[prost(uint32, optional, tag = "3")]
    pub flag: Option<u32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AppendResponse {
    #[prost(message, optional, tag = "1")]
    pub block: Option<LocatedBlock>,
    #[prost(message, optional, tag = "2")]
    pub stat: Option<HdfsFileStatus>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AddBlockRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(string, required, tag = "2")]
    pub client_name: String,
    #[prost(message, optional, tag = "3")]
    pub previous: Option<ExtendedBlock>,
    #[prost(message, repeated, tag = "4")]
    pub exclude_nodes: Vec<DatanodeInfo>,
    #[prost(uint64, optional, tag = "5")]
    pub file_id: Option<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LocatedBlockResponse {
    #[prost(message, required, tag = "1")]
    pub block: LocatedBlock,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CompleteRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(string, required, tag = "2")]
    pub client_name: String,
    #[prost(message, optional, tag = "3")]
    pub last: Option<ExtendedBlock>,
    #[prost(uint64, optional, tag = "4")]
    pub file_id: Option<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AbandonBlockRequest {
    #[prost(message, required, tag = "1")]
    pub b: ExtendedBlock,
    #[prost(string, required, tag = "2")]
    pub src: String,
    #[prost(string, required, tag = "3")]
    pub holder: String,
    #[prost(uint64, optional, tag = "4")]
    pub file_id: Option<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FsyncRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(string, required, tag = "2")]
    pub client: String,
    #[prost(sint64, optional, tag = "3")]
    pub last_block_length: Option<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetAdditionalDatanodeRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(message, required, tag = "2")]
    pub blk: ExtendedBlock,
    #[prost(message, repeated, tag = "3")]
    pub existings: Vec<DatanodeInfo>,
    #[prost(message, repeated, tag = "4")]
    pub excludes: Vec<DatanodeInfo>,
    #[prost(uint32, required, tag = "5")]
    pub num_additional_nodes: u32,
    #[prost(string, required, tag = "6")]
    pub client_name: String,
    /// The storage of each of `existings` (Java sends them; a client may not).
    #[prost(string, repeated, tag = "7")]
    pub existing_storage_uuids: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct UpdateBlockForPipelineRequest {
    #[prost(message, required, tag = "1")]
    pub block: ExtendedBlock,
    #[prost(string, required, tag = "2")]
    pub client_name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct UpdatePipelineRequest {
    #[prost(string, required, tag = "1")]
    pub client_name: String,
    #[prost(message, required, tag = "2")]
    pub old_block: ExtendedBlock,
    #[prost(message, required, tag = "3")]
    pub new_block: ExtendedBlock,
    #[prost(message, repeated, tag = "4")]
    pub new_nodes: Vec<DatanodeId>,
    #[prost(string, repeated, tag = "5")]
    pub storage_ids: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TruncateRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(uint64, required, tag = "2")]
    pub new_length: u64,
    #[prost(string, required, tag = "3")]
    pub client_name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ConcatRequest {
    #[prost(string, required, tag = "1")]
    pub trg: String,
    #[prost(string, repeated, tag = "2")]
    pub srcs: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetPreferredBlockSizeRequest {
    #[prost(string, required, tag = "1")]
    pub filename: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetPreferredBlockSizeResponse {
    #[prost(uint64, required, tag = "1")]
    pub bsize: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetDataEncryptionKeyResponse {}

/// `DatanodeReportTypeProto`.
pub const REPORT_ALL: i32 = 1;
pub const REPORT_LIVE: i32 = 2;
pub const REPORT_DEAD: i32 = 3;
pub const REPORT_DECOMMISSIONING: i32 = 4;
pub const REPORT_ENTERING_MAINTENANCE: i32 = 5;
pub const REPORT_IN_MAINTENANCE: i32 = 6;

/// `SafeModeActionProto`.
pub const SAFEMODE_LEAVE: i32 = 1;
pub const SAFEMODE_ENTER: i32 = 2;
pub const SAFEMODE_GET: i32 = 3;
pub const SAFEMODE_FORCE_EXIT: i32 = 4;
