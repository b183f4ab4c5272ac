//! An error as Hadoop's IPC answers it: the Java exception class a client
//! branches on, its message, and the IPC error code.

use raftfs_proto::FsError;

use crate::wire::rpc::{ERROR_APPLICATION, ERROR_NO_SUCH_METHOD, ERROR_NO_SUCH_PROTOCOL};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{class}: {message}")]
pub struct RemoteError {
    pub class: &'static str,
    pub message: String,
    /// `RpcErrorCodeProto` (an `ERROR_*`: the connection goes on).
    pub code: i32,
}

impl RemoteError {
    pub fn new(class: &'static str, message: impl Into<String>) -> RemoteError {
        RemoteError {
            class,
            message: message.into(),
            code: ERROR_APPLICATION,
        }
    }

    /// A method ClientProtocol does not have (or raftfs does not know).
    pub fn no_such_method(method: &str, protocol: &str) -> RemoteError {
        RemoteError {
            class: "org.apache.hadoop.ipc.RpcNoSuchMethodException",
            message: format!("Unknown method {method} called on {protocol} protocol."),
            code: ERROR_NO_SUCH_METHOD,
        }
    }

    /// A call for a protocol this server does not serve.
    pub fn no_such_protocol(protocol: &str) -> RemoteError {
        RemoteError {
            class: "org.apache.hadoop.ipc.RpcNoSuchProtocolException",
            message: format!("Unknown protocol: {protocol}"),
            code: ERROR_NO_SUCH_PROTOCOL,
        }
    }
}

impl From<FsError> for RemoteError {
    fn from(e: FsError) -> RemoteError {
        RemoteError::new(e.java_class_name(), e.to_string())
    }
}
