//! WebHDFS (`/webhdfs/v1/<path>?op=...`), the REST API HDFS users' scripts
//! and clients speak (Hadoop's WebHDFS.md is the spec): the namespace's
//! operations so far — GETFILESTATUS, LISTSTATUS, LISTSTATUS_BATCH,
//! GETCONTENTSUMMARY, GETQUOTAUSAGE, GETHOMEDIRECTORY, MKDIRS, RENAME,
//! DELETE, SETPERMISSION, SETOWNER, SETREPLICATION, SETTIMES.
//!
//! Guarantees: a request is parsed and checked whole before any call runs
//! ([`WebHdfsOp::parse`]); the caller's user is decided as on the node's gRPC port
//! (`user.name` under `simple`, the certificate's under `strong`, never
//! another than a certificate names); each op is one namespace call, whose
//! permission checks are the namespace's own; errors are Hadoop's
//! `RemoteException` JSON with the status HDFS's WebHDFS answers
//! (`FileNotFoundException` 404, other `IOException`s 403, bad arguments
//! and unsupported ops 400, a standby's `StandbyException` 403).
//!
//! Caveats: the ops that move file data (OPEN, CREATE, APPEND, CONCAT,
//! TRUNCATE, GETFILECHECKSUM) answer `UnsupportedOperationException` until
//! DataNodes serve WebHDFS; no delegation tokens (`delegation=`) and no
//! proxy users (`doas` only for the caller itself).

mod endpoint_calls;
mod json;
mod request;
mod routes;

pub use endpoint_calls::EndpointCalls;
pub use request::{Params, WebHdfsOp, DEFAULT_WEBHDFS_REPLICATION, MAX_WEBHDFS_QUERY_BYTES};
pub use routes::{webhdfs_routes, CallFuture, WebHdfsCaller, WebHdfsNamespace};

/// The user of a request that names none under simple authentication
/// (HDFS's `hadoop.http.staticuser.user`).
pub const ANONYMOUS_USER: &str = "dr.who";
/// Most entries LISTSTATUS returns (a directory's item limit); larger
/// directories are listed with LISTSTATUS_BATCH.
pub const MAX_WEBHDFS_LISTING_ENTRIES: usize = 1_048_576;
