//! The typed error every raftfs call can return.
//!
//! Variants carry the names an HDFS user would search for
//! (`FileNotFoundException`, `NSQuotaExceededException`, …, see
//! [`FsError::exception_name`]); the message is the HDFS-style text. Errors are
//! serializable so that they cross gRPC intact, and [`FsError::is_retryable`]
//! is an exhaustive match: adding a variant forces a decision.

use serde::{Deserialize, Serialize};

/// Where the leader is, when a member knows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderHint {
    pub member_id: u64,
    pub addr: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum FsError {
    #[error("{0}")]
    FileNotFound(String),
    #[error("{0}")]
    FileAlreadyExists(String),
    #[error("{0}")]
    ParentNotDirectory(String),
    #[error("{0}")]
    PathIsNotEmptyDirectory(String),
    #[error("{0}")]
    AccessControl(String),
    #[error("{0}")]
    NSQuotaExceeded(String),
    #[error("{0}")]
    DSQuotaExceeded(String),
    #[error("{0}")]
    InvalidPath(String),
    #[error("{0}")]
    InvalidArgument(String),
    /// The file is under construction by another client (HDFS `AlreadyBeingCreatedException`).
    #[error("{0}")]
    AlreadyBeingCreated(String),
    /// The caller does not hold the lease on the file (HDFS `LeaseExpiredException`).
    #[error("{0}")]
    LeaseExpired(String),
    /// A rename2 refused for a reason HDFS reports as a plain `IOException`
    /// (root source, destination under the source, file/directory mismatch,
    /// non-empty destination directory).
    #[error("{0}")]
    InvalidRename(String),
    /// The member is not the leader; `leader` says who is, when known.
    #[error("not the leader{}", .leader.as_ref().map(|l| format!("; leader is member {} at {}", l.member_id, l.addr)).unwrap_or_default())]
    NotLeader { leader: Option<LeaderHint> },
    #[error("{0}")]
    SafeMode(String),
    /// The service cannot answer now (no quorum, shutting down, connection refused).
    #[error("service unavailable: {0}")]
    Unavailable(String),
    /// The call did not complete in time; it may or may not have been applied.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The member's storage failed (disk full, I/O error).
    #[error("storage error: {0}")]
    Storage(String),
    /// The operation is not supported (yet) by this server.
    #[error("{0}")]
    Unsupported(String),
    /// A bug or an invariant broken on the server.
    #[error("internal error: {0}")]
    Internal(String),
    /// A block has not reached its minimum replicas yet (addBlock of the next
    /// block, or complete); ask again shortly (HDFS `NotReplicatedYetException`).
    #[error("{0}")]
    NotReplicatedYet(String),
    /// The file's lease is being recovered; try again later (HDFS
    /// `RecoveryInProgressException`).
    #[error("{0}")]
    RecoveryInProgress(String),
    /// Stored data does not match its checksum (HDFS `ChecksumException`).
    #[error("{0}")]
    Checksum(String),
    /// No replica of a block could be read (HDFS `BlockMissingException`).
    #[error("{0}")]
    BlockMissing(String),
    /// A DataNode refused a block access token: missing, expired, forged, or
    /// for another block, pool or access (HDFS `InvalidBlockTokenException`).
    /// Not retryable as it is: the client asks for the block's locations
    /// again, which come with fresh tokens.
    #[error("{0}")]
    InvalidToken(String),
    /// A router found no nameservice for the path: no mount point covers
    /// it, it lies above the mount points (the router's own directories),
    /// or its nameservice is disabled (RBF's `NoLocationException`).
    #[error("{0}")]
    Unroutable(String),
    /// A rename or concat whose source and destination live in different
    /// nameservices, which no single nameservice can do atomically (as
    /// EXDEV between Unix file systems). Copy, then delete.
    #[error("{0}")]
    CrossNameservice(String),
    /// A call routed by a mount table of version N named a path this
    /// nameservice does not own at `version` (the one it knows): the
    /// caller's table is stale. It refreshes it (to `version` at least)
    /// and routes the call again.
    #[error("{message}")]
    NotOwned { version: u64, message: String },
}

impl FsError {
    /// True when the same call may succeed if sent again (to another member,
    /// or later). Non-idempotent calls stay safe to retry because every call
    /// carries (client id, call id) and the server answers a retry from its
    /// replicated retry table.
    pub fn is_retryable(&self) -> bool {
        match self {
            FsError::NotLeader { .. }
            | FsError::Unavailable(_)
            | FsError::Timeout(_)
            | FsError::SafeMode(_)
            | FsError::NotReplicatedYet(_)
            | FsError::RecoveryInProgress(_)
            | FsError::NotOwned { .. } => true,
            FsError::FileNotFound(_)
            | FsError::FileAlreadyExists(_)
            | FsError::ParentNotDirectory(_)
            | FsError::PathIsNotEmptyDirectory(_)
            | FsError::AccessControl(_)
            | FsError::NSQuotaExceeded(_)
            | FsError::DSQuotaExceeded(_)
            | FsError::InvalidPath(_)
            | FsError::InvalidArgument(_)
            | FsError::AlreadyBeingCreated(_)
            | FsError::LeaseExpired(_)
            | FsError::InvalidRename(_)
            | FsError::Storage(_)
            | FsError::Unsupported(_)
            | FsError::Internal(_)
            | FsError::Checksum(_)
            | FsError::BlockMissing(_)
            | FsError::InvalidToken(_)
            | FsError::Unroutable(_)
            | FsError::CrossNameservice(_) => false,
        }
    }

    /// The HDFS exception class a Hadoop user knows this error by.
    pub fn exception_name(&self) -> &'static str {
        match self {
            FsError::FileNotFound(_) => "FileNotFoundException",
            FsError::FileAlreadyExists(_) => "FileAlreadyExistsException",
            FsError::ParentNotDirectory(_) => "ParentNotDirectoryException",
            FsError::PathIsNotEmptyDirectory(_) => "PathIsNotEmptyDirectoryException",
            FsError::AccessControl(_) => "AccessControlException",
            FsError::NSQuotaExceeded(_) => "NSQuotaExceededException",
            FsError::DSQuotaExceeded(_) => "DSQuotaExceededException",
            FsError::InvalidPath(_) => "InvalidPathException",
            FsError::InvalidArgument(_) => "IllegalArgumentException",
            FsError::AlreadyBeingCreated(_) => "AlreadyBeingCreatedException",
            FsError::LeaseExpired(_) => "LeaseExpiredException",
            FsError::InvalidRename(_) => "IOException",
            FsError::NotLeader { .. } => "StandbyException",
            FsError::SafeMode(_) => "SafeModeException",
            FsError::Unavailable(_) => "RetriableException",
            FsError::Timeout(_) => "SocketTimeoutException",
            FsError::Storage(_) => "IOException",
            FsError::Unsupported(_) => "UnsupportedOperationException",
            FsError::Internal(_) => "IOException",
            FsError::NotReplicatedYet(_) => "NotReplicatedYetException",
            FsError::RecoveryInProgress(_) => "RecoveryInProgressException",
            FsError::Checksum(_) => "ChecksumException",
            FsError::BlockMissing(_) => "BlockMissingException",
            FsError::InvalidToken(_) => "InvalidBlockTokenException",
            FsError::Unroutable(_) => "NoLocationException",
            FsError::CrossNameservice(_) => "IOException",
            FsError::NotOwned { .. } => "StaleMountTableException",
        }
    }

    /// The Java class Hadoop's clients know this error by.
    pub fn java_class_name(&self) -> &'static str {
        java_class_of(self.exception_name())
    }

    /// The HTTP status WebHDFS answers this error with.
    pub fn http_status(&self) -> u16 {
        match self {
            FsError::FileNotFound(_) => 404,
            FsError::AccessControl(_) => 403,
            FsError::FileAlreadyExists(_) | FsError::AlreadyBeingCreated(_) => 403,
            FsError::InvalidPath(_) | FsError::InvalidArgument(_) => 400,
            FsError::ParentNotDirectory(_) | FsError::PathIsNotEmptyDirectory(_) => 403,
            FsError::NSQuotaExceeded(_) | FsError::DSQuotaExceeded(_) => 403,
            FsError::NotLeader { .. } | FsError::SafeMode(_) | FsError::Unavailable(_) => 503,
            FsError::Timeout(_) => 504,
            FsError::Unsupported(_) => 400,
            FsError::LeaseExpired(_) => 403,
            FsError::InvalidRename(_) => 403,
            FsError::Storage(_) | FsError::Internal(_) => 500,
            FsError::NotReplicatedYet(_) | FsError::RecoveryInProgress(_) => 503,
            FsError::Checksum(_) | FsError::BlockMissing(_) => 500,
            FsError::InvalidToken(_) => 403,
            FsError::Unroutable(_) => 404,
            FsError::CrossNameservice(_) => 403,
            FsError::NotOwned { .. } => 503,
        }
    }
}

/// The Java class of each exception raftfs answers with, by its simple
/// name (as [`FsError::exception_name`] gives it); `java.io.IOException`
/// for any other.
pub fn java_class_of(exception: &str) -> &'static str {
    match exception {
        "FileNotFoundException" => "java.io.FileNotFoundException",
        "FileAlreadyExistsException" => "org.apache.hadoop.fs.FileAlreadyExistsException",
        "ParentNotDirectoryException" => "org.apache.hadoop.fs.ParentNotDirectoryException",
        "PathIsNotEmptyDirectoryException" => "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException",
        "AccessControlException" => "org.apache.hadoop.security.AccessControlException",
        "NSQuotaExceededException" => "org.apache.hadoop.hdfs.protocol.NSQuotaExceededException",
        "DSQuotaExceededException" => "org.apache.hadoop.hdfs.protocol.DSQuotaExceededException",
        "InvalidPathException" => "org.apache.hadoop.fs.InvalidPathException",
        "IllegalArgumentException" => "java.lang.IllegalArgumentException",
        "AlreadyBeingCreatedException" => "org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException",
        "LeaseExpiredException" => "org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException",
        "StandbyException" => "org.apache.hadoop.ipc.StandbyException",
        "SafeModeException" => "org.apache.hadoop.hdfs.server.namenode.SafeModeException",
        "RetriableException" => "org.apache.hadoop.ipc.RetriableException",
        "SocketTimeoutException" => "java.net.SocketTimeoutException",
        "UnsupportedOperationException" => "java.lang.UnsupportedOperationException",
        "NotReplicatedYetException" => "org.apache.hadoop.hdfs.server.namenode.NotReplicatedYetException",
        "RecoveryInProgressException" => "org.apache.hadoop.hdfs.protocol.RecoveryInProgressException",
        "ChecksumException" => "org.apache.hadoop.fs.ChecksumException",
        "BlockMissingException" => "org.apache.hadoop.hdfs.BlockMissingException",
        "InvalidBlockTokenException" => "org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException",
        "NoLocationException" => "org.apache.hadoop.hdfs.server.federation.router.NoLocationException",
        _ => "java.io.IOException",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_split() {
        assert!(FsError::NotLeader { leader: None }.is_retryable());
        assert!(FsError::Unavailable("x".into()).is_retryable());
        assert!(!FsError::FileNotFound("x".into()).is_retryable());
        assert!(!FsError::AccessControl("x".into()).is_retryable());
    }

    #[test]
    fn not_leader_message_names_the_leader() {
        let e = FsError::NotLeader {
            leader: Some(LeaderHint {
                member_id: 2,
                addr: "127.0.0.1:9".into(),
            }),
        };
        assert_eq!(e.to_string(), "not the leader; leader is member 2 at 127.0.0.1:9");
        assert_eq!(e.exception_name(), "StandbyException");
    }
}
