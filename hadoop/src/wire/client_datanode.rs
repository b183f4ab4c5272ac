//! ClientDatanodeProtocol's requests and answers (hadoop-hdfs-client's
//! `ClientDatanodeProtocol.proto`), those raftfs DataNodes serve: what a
//! reader asks a DataNode about a block still being written, and what
//! `hdfs dfsadmin -getDatanodeInfo` asks.

use super::hdfs::ExtendedBlock;

/// The protocol's name, as Hadoop's clients declare it.
pub const CLIENT_DATANODE_PROTOCOL: &str = "org.apache.hadoop.hdfs.protocol.ClientDatanodeProtocol";

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetReplicaVisibleLengthRequest {
    #[prost(message, required, tag = "1")]
    pub block: ExtendedBlock,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetReplicaVisibleLengthResponse {
    #[prost(uint64, required, tag = "1")]
    pub length: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetDatanodeInfoRequest {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetDatanodeInfoResponse {
    #[prost(message, required, tag = "1")]
    pub local_info: DatanodeLocalInfo,
}

/// hdfs.proto's `DatanodeLocalInfoProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DatanodeLocalInfo {
    #[prost(string, required, tag = "1")]
    pub software_version: String,
    #[prost(string, required, tag = "2")]
    pub config_version: String,
    /// Seconds since the DataNode started.
    #[prost(uint64, required, tag = "3")]
    pub uptime: u64,
}
