//! HDFS's shared messages (hadoop-hdfs-client's `hdfs.proto`, and
//! `Security.proto`'s token): file status, listings, summaries, blocks
//! and their locations, the server's defaults.

/// `HdfsFileStatusProto.FileType`.
pub const FILE_TYPE_DIR: i32 = 1;
pub const FILE_TYPE_FILE: i32 = 2;

/// `ChecksumTypeProto::CHECKSUM_CRC32C`.
pub const CHECKSUM_CRC32C: i32 = 2;

/// `HAServiceStateProto`.
pub const HA_ACTIVE: i32 = 1;
pub const HA_STANDBY: i32 = 2;
pub const HA_OBSERVER: i32 = 3;

/// `DatanodeInfoProto.AdminState`.
pub const ADMIN_NORMAL: i32 = 0;
pub const ADMIN_DECOMMISSION_INPROGRESS: i32 = 1;
pub const ADMIN_DECOMMISSIONED: i32 = 2;

/// `StorageTypeProto::DISK`.
pub const STORAGE_DISK: i32 = 1;

#[derive(Clone, PartialEq, prost::Message)]
pub struct Token {
    #[prost(bytes = "vec", required, tag = "1")]
    pub identifier: Vec<u8>,
    #[prost(bytes = "vec", required, tag = "2")]
    pub password: Vec<u8>,
    #[prost(string, required, tag = "3")]
    pub kind: String,
    #[prost(string, required, tag = "4")]
    pub service: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FsPermission {
    #[prost(uint32, required, tag = "1")]
    pub perm: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExtendedBlock {
    #[prost(string, required, tag = "1")]
    pub pool_id: String,
    #[prost(uint64, required, tag = "2")]
    pub block_id: u64,
    #[prost(uint64, required, tag = "3")]
    pub generation_stamp: u64,
    #[prost(uint64, optional, tag = "4")]
    pub num_bytes: Option<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DatanodeId {
    #[prost(string, required, tag = "1")]
    pub ip_addr: String,
    #[prost(string, required, tag = "2")]
    pub host_name: String,
    #[prost(string, required, tag = "3")]
    pub datanode_uuid: String,
    #[prost(uint32, required, tag = "4")]
    pub xfer_port: u32,
    #[prost(uint32, required, tag = "5")]
    pub info_port: u32,
    #[prost(uint32, required, tag = "6")]
    pub ipc_port: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DatanodeInfo {
    #[prost(message, required, tag = "1")]
    pub id: DatanodeId,
    #[prost(uint64, optional, tag = "2")]
    pub capacity: Option<u64>,
    #[prost(uint64, optional, tag = "3")]
    pub dfs_used: Option<u64>,
    #[prost(uint64, optional, tag = "4")]
    pub remaining: Option<u64>,
    #[prost(uint64, optional, tag = "5")]
    pub block_pool_used: Option<u64>,
    #[prost(uint64, optional, tag = "6")]
    pub last_update: Option<u64>,
    #[prost(uint32, optional, tag = "7")]
    pub xceiver_count: Option<u32>,
    #[prost(uint64, optional, tag = "9")]
    pub non_dfs_used: Option<u64>,
    #[prost(int32, optional, tag = "10")]
    pub admin_state: Option<i32>,
    #[prost(uint32, optional, tag = "17")]
    pub num_blocks: Option<u32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LocatedBlock {
    #[prost(message, required, tag = "1")]
    pub b: ExtendedBlock,
    #[prost(uint64, required, tag = "2")]
    pub offset: u64,
    #[prost(message, repeated, tag = "3")]
    pub locs: Vec<DatanodeInfo>,
    #[prost(bool, required, tag = "4")]
    pub corrupt: bool,
    #[prost(message, required, tag = "5")]
    pub block_token: Token,
    #[prost(bool, repeated, packed = "true", tag = "6")]
    pub is_cached: Vec<bool>,
    #[prost(int32, repeated, packed = "false", tag = "7")]
    pub storage_types: Vec<i32>,
    #[prost(string, repeated, tag = "8")]
    pub storage_ids: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LocatedBlocks {
    #[prost(uint64, required, tag = "1")]
    pub file_length: u64,
    #[prost(message, repeated, tag = "2")]
    pub blocks: Vec<LocatedBlock>,
    #[prost(bool, required, tag = "3")]
    pub under_construction: bool,
    #[prost(message, optional, tag = "4")]
    pub last_block: Option<LocatedBlock>,
    #[prost(bool, required, tag = "5")]
    pub is_last_block_complete: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HdfsFileStatus {
    #[prost(int32, required, tag = "1")]
    pub file_type: i32,
    /// The last path component (the whole path for getFileInfo's answer
    /// is empty, as HDFS sends it).
    #[prost(bytes = "vec", required, tag = "2")]
    pub path: Vec<u8>,
    #[prost(uint64, required, tag = "3")]
    pub length: u64,
    #[prost(message, required, tag = "4")]
    pub permission: FsPermission,
    #[prost(string, required, tag = "5")]
    pub owner: String,
    #[prost(string, required, tag = "6")]
    pub group: String,
    #[prost(uint64, required, tag = "7")]
    pub modification_time: u64,
    #[prost(uint64, required, tag = "8")]
    pub access_time: u64,
    #[prost(uint32, optional, tag = "10")]
    pub block_replication: Option<u32>,
    #[prost(uint64, optional, tag = "11")]
    pub blocksize: Option<u64>,
    #[prost(message, optional, tag = "12")]
    pub locations: Option<LocatedBlocks>,
    #[prost(uint64, optional, tag = "13")]
    pub file_id: Option<u64>,
    #[prost(int32, optional, tag = "14")]
    pub children_num: Option<i32>,
    #[prost(uint32, optional, tag = "16")]
    pub storage_policy: Option<u32>,
    #[prost(uint32, optional, tag = "18")]
    pub flags: Option<u32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DirectoryListing {
    #[prost(message, repeated, tag = "1")]
    pub partial_listing: Vec<HdfsFileStatus>,
    #[prost(uint32, required, tag = "2")]
    pub remaining_entries: u32,
}

/// Quotas are Java longs sent as uint64: -1 (none) is 2^64 - 1.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContentSummary {
    #[prost(uint64, required, tag = "1")]
    pub length: u64,
    #[prost(uint64, required, tag = "2")]
    pub file_count: u64,
    #[prost(uint64, required, tag = "3")]
    pub directory_count: u64,
    #[prost(uint64, required, tag = "4")]
    pub quota: u64,
    #[prost(uint64, required, tag = "5")]
    pub space_consumed: u64,
    #[prost(uint64, required, tag = "6")]
    pub space_quota: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct QuotaUsage {
    #[prost(uint64, required, tag = "1")]
    pub file_and_directory_count: u64,
    #[prost(uint64, required, tag = "2")]
    pub quota: u64,
    #[prost(uint64, required, tag = "3")]
    pub space_consumed: u64,
    #[prost(uint64, required, tag = "4")]
    pub space_quota: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FsServerDefaults {
    #[prost(uint64, required, tag = "1")]
    pub block_size: u64,
    #[prost(uint32, required, tag = "2")]
    pub bytes_per_checksum: u32,
    #[prost(uint32, required, tag = "3")]
    pub write_packet_size: u32,
    #[prost(uint32, required, tag = "4")]
    pub replication: u32,
    #[prost(uint32, required, tag = "5")]
    pub file_buffer_size: u32,
    #[prost(bool, optional, tag = "6")]
    pub encrypt_data_transfer: Option<bool>,
    #[prost(uint64, optional, tag = "7")]
    pub trash_interval: Option<u64>,
    #[prost(int32, optional, tag = "8")]
    pub checksum_type: Option<i32>,
}
