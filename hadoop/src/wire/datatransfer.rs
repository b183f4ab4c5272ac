//! DataTransferProtocol's messages (hadoop-hdfs-client's
//! `datatransfer.proto`): the op headers a client sends a DataNode, the
//! DataNode's answer, and the header of every data packet.
//!
//! On the wire an op is a big-endian u16 version ([`DATA_TRANSFER_VERSION`]),
//! an op code byte and the varint-delimited op message; the answer is a
//! varint-delimited [`BlockOpResponse`]. A packet is a big-endian u32
//! payload length (4 + checksum bytes + data bytes), a big-endian u16
//! header length, the [`PacketHeader`], the checksums (one big-endian
//! CRC32C per 512-byte chunk) and the data.

use super::hdfs::{ExtendedBlock, Token};

pub const DATA_TRANSFER_VERSION: u16 = 28;

/// Op codes (`Op.java`).
pub const OP_WRITE_BLOCK: u8 = 80;
pub const OP_READ_BLOCK: u8 = 81;
pub const OP_READ_METADATA: u8 = 82;
pub const OP_REPLACE_BLOCK: u8 = 83;
pub const OP_COPY_BLOCK: u8 = 84;
pub const OP_BLOCK_CHECKSUM: u8 = 85;
pub const OP_TRANSFER_BLOCK: u8 = 86;
pub const OP_REQUEST_SHORT_CIRCUIT_FDS: u8 = 87;
pub const OP_RELEASE_SHORT_CIRCUIT_FDS: u8 = 88;
pub const OP_REQUEST_SHORT_CIRCUIT_SHM: u8 = 89;
pub const OP_BLOCK_GROUP_CHECKSUM: u8 = 90;

/// `Status`.
pub const STATUS_SUCCESS: i32 = 0;
pub const STATUS_ERROR: i32 = 1;
pub const STATUS_ERROR_CHECKSUM: i32 = 2;
pub const STATUS_ERROR_INVALID: i32 = 3;
pub const STATUS_ERROR_ACCESS_TOKEN: i32 = 5;
pub const STATUS_CHECKSUM_OK: i32 = 6;
pub const STATUS_ERROR_UNSUPPORTED: i32 = 7;

#[derive(Clone, PartialEq, prost::Message)]
pub struct BaseHeader {
    #[prost(message, required, tag = "1")]
    pub block: ExtendedBlock,
    #[prost(message, optional, tag = "2")]
    pub token: Option<Token>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ClientOperationHeader {
    #[prost(message, required, tag = "1")]
    pub base_header: BaseHeader,
    #[prost(string, required, tag = "2")]
    pub client_name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct OpReadBlock {
    #[prost(message, required, tag = "1")]
    pub header: ClientOperationHeader,
    #[prost(uint64, required, tag = "2")]
    pub offset: u64,
    #[prost(uint64, required, tag = "3")]
    pub len: u64,
    #[prost(bool, optional, tag = "4")]
    pub send_checksums: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ChecksumInfo {
    /// `ChecksumTypeProto`.
    #[prost(int32, required, tag = "1")]
    pub checksum_type: i32,
    #[prost(uint32, required, tag = "2")]
    pub bytes_per_checksum: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ReadOpChecksumInfo {
    #[prost(message, required, tag = "1")]
    pub checksum: ChecksumInfo,
    /// Where the first packet starts: the offset asked for, rounded down
    /// to a chunk boundary.
    #[prost(uint64, required, tag = "2")]
    pub chunk_offset: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BlockOpResponse {
    #[prost(int32, required, tag = "1")]
    pub status: i32,
    #[prost(string, optional, tag = "2")]
    pub first_bad_link: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub checksum_response: Option<OpBlockChecksumResponse>,
    #[prost(message, optional, tag = "4")]
    pub read_op_checksum_info: Option<ReadOpChecksumInfo>,
    #[prost(string, optional, tag = "5")]
    pub message: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PacketHeader {
    #[prost(sfixed64, required, tag = "1")]
    pub offset_in_block: i64,
    #[prost(sfixed64, required, tag = "2")]
    pub seqno: i64,
    #[prost(bool, required, tag = "3")]
    pub last_packet_in_block: bool,
    #[prost(sfixed32, required, tag = "4")]
    pub data_len: i32,
    #[prost(bool, optional, tag = "5")]
    pub sync_block: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ClientReadStatus {
    #[prost(int32, required, tag = "1")]
    pub status: i32,
}

/// `BlockConstructionStage` values raftfs serves.
pub const STAGE_PIPELINE_SETUP_APPEND: i32 = 0;
pub const STAGE_PIPELINE_SETUP_APPEND_RECOVERY: i32 = 1;
pub const STAGE_PIPELINE_SETUP_STREAMING_RECOVERY: i32 = 3;
pub const STAGE_PIPELINE_SETUP_CREATE: i32 = 6;

/// The seqno of a heartbeat packet (no data; acknowledged at once).
pub const HEARTBEAT_SEQNO: i64 = -1;

#[derive(Clone, PartialEq, prost::Message)]
pub struct OpWriteBlock {
    #[prost(message, required, tag = "1")]
    pub header: ClientOperationHeader,
    /// The DataNodes after the one addressed.
    #[prost(message, repeated, tag = "2")]
    pub targets: Vec<super::hdfs::DatanodeInfo>,
    #[prost(int32, required, tag = "4")]
    pub stage: i32,
    #[prost(uint32, required, tag = "5")]
    pub pipeline_size: u32,
    #[prost(uint64, required, tag = "6")]
    pub min_bytes_rcvd: u64,
    #[prost(uint64, required, tag = "7")]
    pub max_bytes_rcvd: u64,
    #[prost(uint64, required, tag = "8")]
    pub latest_generation_stamp: u64,
    #[prost(message, required, tag = "9")]
    pub requested_checksum: ChecksumInfo,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PipelineAck {
    #[prost(sint64, required, tag = "1")]
    pub seqno: i64,
    /// One status per node of the pipeline from this one down.
    #[prost(int32, repeated, packed = "false", tag = "2")]
    pub reply: Vec<i32>,
    #[prost(uint64, optional, tag = "3")]
    pub downstream_ack_time_nanos: Option<u64>,
    /// The same statuses in Hadoop 3's header form (status in the low bits).
    #[prost(uint32, repeated, packed = "true", tag = "4")]
    pub flag: Vec<u32>,
}

/// `BlockChecksumTypeProto`: the MD5 of the chunks' CRCs (HDFS's default),
/// or a chunk-independent CRC.
pub const BLOCK_CHECKSUM_MD5CRC: i32 = 1;
pub const BLOCK_CHECKSUM_COMPOSITE_CRC: i32 = 2;

#[derive(Clone, PartialEq, prost::Message)]
pub struct BlockChecksumOptions {
    #[prost(int32, optional, tag = "1")]
    pub block_checksum_type: Option<i32>,
    #[prost(uint32, optional, tag = "2")]
    pub stripe_length: Option<u32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct OpBlockChecksum {
    #[prost(message, required, tag = "1")]
    pub header: BaseHeader,
    #[prost(message, optional, tag = "2")]
    pub block_checksum_options: Option<BlockChecksumOptions>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct OpBlockChecksumResponse {
    #[prost(uint32, required, tag = "1")]
    pub bytes_per_crc: u32,
    #[prost(uint64, required, tag = "2")]
    pub crc_per_block: u64,
    #[prost(bytes = "vec", required, tag = "3")]
    pub block_checksum: Vec<u8>,
    /// `ChecksumTypeProto`.
    #[prost(int32, optional, tag = "4")]
    pub crc_type: Option<i32>,
    #[prost(message, optional, tag = "5")]
    pub block_checksum_options: Option<BlockChecksumOptions>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct OpTransferBlock {
    #[prost(message, required, tag = "1")]
    pub header: ClientOperationHeader,
    #[prost(message, repeated, tag = "2")]
    pub targets: Vec<super::hdfs::DatanodeInfo>,
    #[prost(int32, repeated, packed = "false", tag = "3")]
    pub target_storage_types: Vec<i32>,
    #[prost(string, repeated, tag = "4")]
    pub target_storage_ids: Vec<String>,
}
