//! The IPC layer's messages: what frames every call and answer, the SASL
//! exchange and the connection context (hadoop-common's `RpcHeader`,
//! `IpcConnectionContext`, `ProtobufRpcEngine2`).

/// `RpcKindProto::RPC_PROTOCOL_BUFFER`: the only serialization served.
pub const RPC_KIND_PROTOCOL_BUFFER: i32 = 2;
/// `OperationProto::RPC_CLOSE_CONNECTION`.
pub const RPC_OP_CLOSE_CONNECTION: i32 = 2;

/// Call ids below zero name the IPC layer's own messages.
pub const CONNECTION_CONTEXT_CALL_ID: i32 = -3;
pub const PING_CALL_ID: i32 = -4;
pub const SASL_CALL_ID: i32 = -33;
/// The call id of an answer to a connection that never got as far as a call.
pub const INVALID_CALL_ID: i32 = -1;

/// `RpcStatusProto`.
pub const STATUS_SUCCESS: i32 = 0;
pub const STATUS_ERROR: i32 = 1;
pub const STATUS_FATAL: i32 = 2;

/// `RpcErrorCodeProto`: ERROR_* leave the connection open, FATAL_* close it.
pub const ERROR_APPLICATION: i32 = 1;
pub const ERROR_NO_SUCH_METHOD: i32 = 2;
pub const ERROR_NO_SUCH_PROTOCOL: i32 = 3;
pub const ERROR_RPC_SERVER: i32 = 4;
pub const FATAL_UNSUPPORTED_SERIALIZATION: i32 = 11;
pub const FATAL_INVALID_RPC_HEADER: i32 = 12;
pub const FATAL_DESERIALIZING_REQUEST: i32 = 13;
pub const FATAL_VERSION_MISMATCH: i32 = 14;
pub const FATAL_UNAUTHORIZED: i32 = 15;

/// `SaslState`.
pub const SASL_SUCCESS: i32 = 0;
pub const SASL_NEGOTIATE: i32 = 1;
pub const SASL_INITIATE: i32 = 2;

#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcRequestHeader {
    #[prost(int32, optional, tag = "1")]
    pub rpc_kind: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub rpc_op: Option<i32>,
    #[prost(sint32, required, tag = "3")]
    pub call_id: i32,
    /// Decoded from a `Bytes` frame without a copy (a slice of it).
    #[prost(bytes = "bytes", required, tag = "4")]
    pub client_id: bytes::Bytes,
    /// 0 on a first try, n on the n-th retry (-1: not sent).
    #[prost(sint32, optional, tag = "5")]
    pub retry_count: Option<i32>,
    /// The last state id the client saw (observer reads).
    #[prost(int64, optional, tag = "8")]
    pub state_id: Option<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcResponseHeader {
    /// The request's call id, as the unsigned 32 bits of the signed one.
    #[prost(uint32, required, tag = "1")]
    pub call_id: u32,
    #[prost(int32, required, tag = "2")]
    pub status: i32,
    #[prost(uint32, optional, tag = "3")]
    pub server_ipc_version_num: Option<u32>,
    #[prost(string, optional, tag = "4")]
    pub exception_class_name: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub error_msg: Option<String>,
    #[prost(int32, optional, tag = "6")]
    pub error_detail: Option<i32>,
    #[prost(bytes = "bytes", optional, tag = "7")]
    pub client_id: Option<bytes::Bytes>,
    #[prost(sint32, optional, tag = "8")]
    pub retry_count: Option<i32>,
    /// The server's state id (the last applied log index).
    #[prost(int64, optional, tag = "9")]
    pub state_id: Option<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcSasl {
    #[prost(uint32, optional, tag = "1")]
    pub version: Option<u32>,
    #[prost(int32, required, tag = "2")]
    pub state: i32,
    #[prost(bytes = "vec", optional, tag = "3")]
    pub token: Option<Vec<u8>>,
    #[prost(message, repeated, tag = "4")]
    pub auths: Vec<SaslAuth>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SaslAuth {
    #[prost(string, required, tag = "1")]
    pub method: String,
    #[prost(string, required, tag = "2")]
    pub mechanism: String,
    #[prost(string, optional, tag = "3")]
    pub protocol: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub server_id: Option<String>,
    /// The server's first challenge for this mechanism (in NEGOTIATE).
    #[prost(bytes = "vec", optional, tag = "5")]
    pub challenge: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct UserInformation {
    #[prost(string, optional, tag = "1")]
    pub effective_user: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub real_user: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct IpcConnectionContext {
    #[prost(message, optional, tag = "2")]
    pub user_info: Option<UserInformation>,
    #[prost(string, optional, tag = "3")]
    pub protocol: Option<String>,
}

/// `ProtobufRpcEngine2`'s request header: which method of which protocol.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RequestHeader {
    /// UTF-8 (a protobuf `string`), kept as the frame's bytes: decoded
    /// from a `Bytes` frame without a copy, as every call's header is.
    #[prost(bytes = "bytes", required, tag = "1")]
    pub method_name: bytes::Bytes,
    #[prost(bytes = "bytes", required, tag = "2")]
    pub declaring_class_protocol_name: bytes::Bytes,
    #[prost(uint64, required, tag = "3")]
    pub client_protocol_version: u64,
}
