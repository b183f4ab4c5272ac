//! The typed error of everything credentials: files, certificates, names.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum TrustError {
    /// A credentials file could not be read or written.
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// A credentials directory lacks a file it needs.
    #[error("{path} is missing: {hint}")]
    Missing { path: String, hint: String },
    /// A certificate or key that does not parse or does not fit.
    #[error("bad certificate: {0}")]
    BadCertificate(String),
    /// A certificate names another cluster.
    #[error("the certificate belongs to cluster {found}, not {expected}")]
    WrongCluster { expected: String, found: String },
    /// A role, id or host name that cannot go into a certificate.
    #[error("{0}")]
    InvalidName(String),
    /// The CA directory already holds a CA.
    #[error("{0} already holds a cluster CA")]
    AlreadyExists(String),
    /// Key generation or signing failed.
    #[error("could not make the certificate: {0}")]
    Generate(String),
}

impl TrustError {
    /// Credentials problems are fixed by an operator, never by calling again.
    pub fn is_retryable(&self) -> bool {
        match self {
            TrustError::Io { .. }
            | TrustError::Missing { .. }
            | TrustError::BadCertificate(_)
            | TrustError::WrongCluster { .. }
            | TrustError::InvalidName(_)
            | TrustError::AlreadyExists(_)
            | TrustError::Generate(_) => false,
        }
    }

    pub(crate) fn io(path: &std::path::Path, e: std::io::Error) -> TrustError {
        TrustError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }
}
