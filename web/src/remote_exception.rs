//! An error as Hadoop's HTTP servlets and WebHDFS write it:
//! `{"RemoteException": {"exception", "javaClassName", "message"}}` with
//! the status HDFS uses, so HDFS clients map it to their own exceptions.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{exception} ({status}): {message}")]
pub struct RemoteException {
    pub status: StatusCode,
    /// The Java class's simple name (`AccessControlException`).
    pub exception: &'static str,
    pub java_class_name: &'static str,
    pub message: String,
}

impl RemoteException {
    pub fn new(status: StatusCode, java_class_name: &'static str, message: impl Into<String>) -> RemoteException {
        RemoteException {
            status,
            exception: java_class_name.rsplit('.').next().unwrap_or(java_class_name),
            java_class_name,
            message: message.into(),
        }
    }

    /// 403, a caller who may not do this.
    pub fn access_control(message: impl Into<String>) -> RemoteException {
        RemoteException::new(
            StatusCode::FORBIDDEN,
            "org.apache.hadoop.security.AccessControlException",
            message,
        )
    }

    /// 401, a caller who did not authenticate where it must.
    pub fn authentication_required(message: impl Into<String>) -> RemoteException {
        RemoteException::new(
            StatusCode::UNAUTHORIZED,
            "org.apache.hadoop.security.authentication.client.AuthenticationException",
            message,
        )
    }

    /// 400, a request that makes no sense.
    pub fn illegal_argument(message: impl Into<String>) -> RemoteException {
        RemoteException::new(StatusCode::BAD_REQUEST, "java.lang.IllegalArgumentException", message)
    }

    /// The JSON body.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "RemoteException": {
                "exception": self.exception,
                "javaClassName": self.java_class_name,
                "message": self.message,
            }
        })
    }
}

/// A namespace error as HDFS's WebHDFS answers it (`ExceptionHandler`):
/// 404 for a missing file, 400 for bad arguments and unsupported ops, 500
/// for a server bug, 403 for every other `IOException` (a permission
/// refusal, an existing file, a standby's `StandbyException`, safe mode).
impl From<&raftfs_proto::FsError> for RemoteException {
    fn from(e: &raftfs_proto::FsError) -> RemoteException {
        use raftfs_proto::FsError as E;
        let status = match e {
            E::FileNotFound(_) => StatusCode::NOT_FOUND,
            E::InvalidPath(_) | E::InvalidArgument(_) | E::Unsupported(_) => StatusCode::BAD_REQUEST,
            E::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::FORBIDDEN,
        };
        let exception = e.exception_name();
        RemoteException {
            status,
            exception,
            java_class_name: raftfs_proto::java_class_of(exception),
            message: e.to_string(),
        }
    }
}

impl IntoResponse for RemoteException {
    fn into_response(self) -> Response {
        let body = self.to_json().to_string();
        (self.status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_is_hadoops() {
        let e = RemoteException::access_control("no");
        assert_eq!(
            e.to_json(),
            serde_json::json!({"RemoteException": {
                "exception": "AccessControlException",
                "javaClassName": "org.apache.hadoop.security.AccessControlException",
                "message": "no"
            }})
        );
        assert_eq!(e.status, StatusCode::FORBIDDEN);
    }

    #[test]
    fn namespace_errors_get_hdfss_status_and_class() {
        use raftfs_proto::FsError;
        let missing = RemoteException::from(&FsError::FileNotFound("File does not exist: /x".into()));
        assert_eq!(
            (missing.status, missing.java_class_name),
            (StatusCode::NOT_FOUND, "java.io.FileNotFoundException")
        );
        let standby = RemoteException::from(&FsError::NotLeader { leader: None });
        assert_eq!(
            (standby.status, standby.exception),
            (StatusCode::FORBIDDEN, "StandbyException")
        );
        let exists = RemoteException::from(&FsError::FileAlreadyExists("x".into()));
        assert_eq!(
            exists.java_class_name,
            "org.apache.hadoop.fs.FileAlreadyExistsException"
        );
        assert_eq!(
            RemoteException::from(&FsError::InvalidPath("..".into())).status,
            StatusCode::BAD_REQUEST
        );
    }
}
