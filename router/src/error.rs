//! The router's typed errors, serializable so that they cross RPC intact.

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
            | MountTableError::Overlap(_) => false,
        }
    }
}
