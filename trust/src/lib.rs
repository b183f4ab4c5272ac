//! Cluster credentials: who may talk to whom inside a raftfs cluster.
//!
//! A cluster has one certificate authority ([`ClusterCa`]), made by
//! `raftfs format` when it creates the cluster. Every member, DataNode (and
//! later router) holds a certificate the CA issued, naming the node's
//! [`PeerRole`], its id and the ClusterID ([`PeerIdentity`], carried as the
//! URI `raftfs://<cluster-id>/<role>/<id>` in the subject alternative names).
//!
//! What this crate guarantees:
//! - **Mutual TLS on internal traffic.** A server built with
//!   [`ServerSecurity::Tls`] proves its role to callers: a caller dialing a
//!   member verifies the name `member.raftfs`, which only member certificates
//!   carry (the same for DataNodes), so a DataNode cannot pose as a member.
//!   Callers that hold a certificate present it; clients of the namespace
//!   need none (their identity is the user, checked per operation).
//! - **Per-service role checks.** [`ServerSecurity::require`] reads the
//!   certificate the caller presented on its connection and refuses a call
//!   from any other role, from a certificate of another cluster, or from a
//!   caller with no certificate, with a `PermissionDenied` status naming what
//!   was missing. A certificate of another cluster's CA fails the handshake
//!   itself; the ClusterID check is a second line.
//! - **Block access tokens** ([`block_token`]): members sign what a client
//!   may do to one block; DataNodes check it before they serve the block.
//! - **No home-made cryptography.** Keys and certificates come from rcgen
//!   (ECDSA P-256 on ring), the handshake from rustls through tonic, and
//!   parsing from x509-parser.
//!
//! Caveats: [`ServerSecurity::Plaintext`] (`--insecure`) checks nothing and
//! is for trusted networks and comparisons only. There is no revocation list
//! yet: a leaked node key is answered by a new CA (re-issue every
//! certificate). Certificates are valid from a day before they are issued so
//! that nodes whose clocks lag still accept them.

mod authority;
pub mod block_token;
mod client_auth;
pub mod clock;
mod credentials;
pub mod delegation;
mod error;
mod peer;
mod role;
mod seen_proofs;
pub mod token_table;

pub use authority::ClusterCa;
pub use block_token::{BlockKeyRing, BlockTokenSecretManager, BlockTokenTimes};
pub use client_auth::ClientAuth;
pub use credentials::{Dialer, NodeCredentials, NodeSecurity, TLS_HANDSHAKE_TIMEOUT_MS};
pub use delegation::DelegationTokenTimes;
pub use error::TrustError;
pub use peer::ServerSecurity;
pub use role::{PeerIdentity, PeerRole, NAMESPACE_SERVER_NAME};
pub use seen_proofs::{SeenProofs, MAX_REMEMBERED_BLOCK_PROOFS, SEEN_PROOF_MEMORY_MS};

/// The CA's certificate, in a CA directory and in every node's credentials.
pub const CA_CERT_FILE: &str = "ca.crt";
/// The CA's private key (only in the CA directory; mode 0600).
pub const CA_KEY_FILE: &str = "ca.key";
/// A node's certificate in its credentials directory.
pub const NODE_CERT_FILE: &str = "node.crt";
/// A node's private key in its credentials directory (mode 0600).
pub const NODE_KEY_FILE: &str = "node.key";
/// How long a cluster CA is valid.
pub const CA_VALIDITY_DAYS: i64 = 3650;
/// How long a node certificate is valid unless the operator says otherwise.
pub const DEFAULT_CERT_VALIDITY_DAYS: i64 = 365;
/// Most days a certificate may be issued for (no longer than the CA).
pub const MAX_CERT_VALIDITY_DAYS: i64 = CA_VALIDITY_DAYS;
/// Certificates are valid from this long before they are issued, so that a
/// peer whose clock is behind the issuer's still accepts them.
pub const NOT_BEFORE_SLACK_SECS: i64 = 86_400;
/// Longest node id or user name a certificate may carry.
pub const MAX_ID_CHARS: usize = 128;
/// Largest certificate or key file read from disk.
pub const MAX_PEM_FILE_BYTES: u64 = 64 * 1024;

#[cfg(test)]
mod tests;
