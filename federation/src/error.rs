//! The router's typed errors, serializable so that they cross RPC intact.

use raftfs_proto::FsError;
use serde::{Deserialize, Serialize};

/// Why a mount-table change or lookup was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum MountTableError {
    /// A malformed path, mode, order or entry.
    #[error("invalid mount entry: {0}")]
    Invalid(String),
    #[error("mount point {0} already exists")]
    AlreadyExists(String),
    #[error("no mount point {0}")]
    NotFound(String),
    #[error("unknown nameservice {0}")]
    UnknownNameservice(String),
    /// Two entries would lead into the same part of one nameservice.
    #[error("overlapping mount entries: {0}")]
    Overlap(String),
    #[error("nameservice {0} already exists")]
    NameserviceExists(String),
    /// A nameservice cannot go while mount points lead into it.
    #[error("nameservice {0} is in use: {1}")]
    NameserviceInUse(String, String),
    /// Only the superuser changes the mount table.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
}

impl MountTableError {
    /// Whether the same call may succeed if retried unchanged: none of
    /// these; each says what to change.
    pub fn is_retryable(&self) -> bool {
        match self {
            MountTableError::Invalid(_)
            | MountTableError::AlreadyExists(_)
            | MountTableError::NotFound(_)
            | MountTableError::UnknownNameservice(_)
            | MountTableError::Overlap(_)
            | MountTableError::NameserviceExists(_)
            | MountTableError::NameserviceInUse(..)
            | MountTableError::PermissionDenied(_) => false,
        }
    }
}

/// Why a router call failed: a refused mount-table change, or a failure
/// any raftfs service can give (not the leader, unavailable, access denied,
/// bad input), as the nameservices' [`FsError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum RouterError {
    #[error(transparent)]
    MountTable(#[from] MountTableError),
    #[error(transparent)]
    Fs(#[from] FsError),
}

impl RouterError {
    /// Whether the same call may succeed if retried (elsewhere, or later).
    pub fn is_retryable(&self) -> bool {
        match self {
            RouterError::MountTable(e) => e.is_retryable(),
            RouterError::Fs(e) => e.is_retryable(),
        }
    }
}
