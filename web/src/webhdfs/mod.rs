//! WebHDFS (`/webhdfs/v1/<path>?op=...`), the REST API HDFS users' scripts
//! and clients speak (Hadoop's WebHDFS.md is the spec).
//!
//! A namespace endpoint (a member, for its nameservice; a router, for the
//! federation) answers GETFILESTATUS, LISTSTATUS, LISTSTATUS_BATCH,
//! GETCONTENTSUMMARY, GETQUOTAUSAGE, GETHOMEDIRECTORY, MKDIRS, RENAME,
//! DELETE, SETPERMISSION, SETOWNER, SETREPLICATION and SETTIMES itself, and
//! redirects OPEN, CREATE, APPEND and GETFILECHECKSUM (307, or `{"Location"}`
//! with `noredirect=true`) to a DataNode's endpoint, which runs them through
//! the SDK's pipeline, checksums and leases ([`DatanodeRedirect`]).
//!
//! Guarantees: a request is parsed and checked whole before any call runs
//! ([`WebHdfsOp::parse`]); the caller's user is decided as on the node's gRPC port
//! (`user.name` under `simple`, the certificate's under `strong`, never
//! another than a certificate names), or is the owner of the delegation
//! token it presents (`delegation=`), verified before anything runs; each
//! namespace op is one namespace call, whose permission checks are the
//! namespace's own; errors are Hadoop's `RemoteException` JSON with the
//! status HDFS's WebHDFS answers (`FileNotFoundException` 404, other
//! `IOException`s 403, bad arguments and unsupported ops 400, a standby's
//! `StandbyException` 403).
//!
//! Caveats: snapshot and ACL ops answer `UnsupportedOperationException`
//! (raftfs has neither); no proxy users (`doas` only for the
//! caller itself).

mod datanode_turns;
mod endpoint_calls;
mod json;
mod redirect;
mod request;
mod routes;

pub use datanode_turns::{first_block_holders, DatanodeHttp, DatanodeTurns};
pub use endpoint_calls::EndpointCalls;
pub use json::file_checksum;
pub use redirect::{encode_path, DatanodeRedirect, NAMENODE_PARAM};
pub use request::{
    Params, WebHdfsOp, DEFAULT_WEBHDFS_FILE_PERMISSION, DEFAULT_WEBHDFS_REPLICATION, MAX_WEBHDFS_QUERY_BYTES,
};
pub use routes::{
    caller_by_token, caller_of, webhdfs_routes, CallFuture, RedirectFuture, WebHdfsCaller, WebHdfsNamespace,
};

/// The user of a request that names none under simple authentication
/// (HDFS's `hadoop.http.staticuser.user`).
pub const ANONYMOUS_USER: &str = "dr.who";
/// Most entries LISTSTATUS returns (a directory's item limit); larger
/// directories are listed with LISTSTATUS_BATCH.
pub const MAX_WEBHDFS_LISTING_ENTRIES: usize = 1_048_576;
