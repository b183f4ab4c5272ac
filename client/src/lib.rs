//! The raftfs SDK: an async, Hadoop-style `FileSystem` API over a
//! nameservice, and the `dfs` shell commands built on it.
//!
//! * [`FileSystem::connect`] takes any member addresses
//!   (`raftfs://h:p,h:p,h:p`); it finds the leader, follows `NotLeader`
//!   hints, and retries retryable errors with bounded, jittered backoff
//!   until a deadline ([`ClientOptions::call_deadline_ms`]).
//! * Every call carries (client id, call id); a retry reuses the call id, so
//!   the server's replicated retry table answers a retried non-idempotent
//!   call (create, rename, delete, …) with its first result.
//! * Given routers' addresses, it routes each call itself by default:
//!   [`FederationWatch`] keeps the routers' mount table current and
//!   [`federated::CallRouter`] sends each call to the leader of the
//!   nameservice that owns its path ([`Routing`]).

mod call_stream;
mod data;
mod delegation;
pub mod dfs;
pub mod federated;
mod federation_watch;
mod fs;
mod identity;
mod leader_conn;
mod options;
mod tls;
pub mod uri;

pub use data::{FileChecksum, FileReader, FileWriter};
pub use delegation::{
    read_token_file, write_credential_file, write_token_file, DelegationTokenSource, DELEGATION_TOKEN_ENV,
};
pub use federation_watch::FederationWatch;
pub use fs::FileSystem;
pub use identity::Identity;
pub use options::{ClientOptions, FollowerReads, Routing, DEFAULT_BLOCK_SIZE_BYTES, DEFAULT_REPLICATION};
pub use raftfs_proto::{ContentSummary, FileStatus, FileType, FsError, Permission};
pub use tls::{ClientTls, CA_ENV, CREDENTIALS_ENV, INSECURE_ENV};

/// The role a router reports in `MemberInfo` (members report `LEADER`,
/// `FOLLOWER`, …): a client that reaches routers learns so from it.
pub const ROUTER_ROLE: &str = "ROUTER";
