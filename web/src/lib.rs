//! raftfs's HTTP surfaces (the NameNode's and DataNode's "HTTP server" in
//! HDFS): what every member, DataNode and router serves on `--http-addr`.
//!
//! * [`serve`]: the listener. Under TLS (every node not started with
//!   `--insecure`) it speaks HTTPS with the node's own certificate, and a
//!   caller may present a certificate of the cluster's CA, as on the gRPC
//!   listener; each request carries an [`HttpCaller`] saying who called.
//!   Connections are bounded ([`MAX_HTTP_CONNECTIONS`]), as are the time to
//!   finish a TLS handshake and to send a request's headers.
//! * [`HttpCaller::may_read_instrumentation`]: who may read metrics, as
//!   Hadoop's HTTP authentication decides it: under `simple` anyone who
//!   reaches the port (Hadoop's `hadoop.http.authentication.type=simple`
//!   with anonymous access, its default); under `strong` only a caller
//!   with a certificate of this cluster (Hadoop's SPNEGO).
//! * [`metrics_page`]: a Prometheus registry in Prometheus's text format
//!   (the `prometheus` crate's encoder, not a hand-written one).
//! * [`jmx`]: Hadoop's `/jmx` JSON (`{"beans": [...]}`, `?qry=`), for the
//!   dashboards and scripts that read a NameNode's beans.
//! * [`RemoteException`]: errors as WebHDFS and Hadoop's servlets write them.
//! * [`webhdfs`]: the WebHDFS REST API over a namespace.
//! * [`status`]: the status pages' frame and the file browser.
//!
//! Caveat: HTTP callers present a certificate or a delegation token
//! (`delegation=`); Hadoop's SPNEGO (Kerberos over HTTP) is not spoken.

mod caller;
pub mod jmx;
mod metrics_page;
mod remote_exception;
mod server;
pub mod status;
pub mod webhdfs;

pub use axum;
pub use caller::HttpCaller;
pub use metrics_page::{metrics_page, registered, sync_counter, METRICS_CONTENT_TYPE};
pub use prometheus;
pub use remote_exception::RemoteException;
pub use server::{serve, HttpListener};

/// Most HTTP connections a node serves at once; more wait in the kernel's
/// accept queue.
pub const MAX_HTTP_CONNECTIONS: usize = 256;
/// Longest a caller may take to send a request's headers.
pub const HTTP_HEADER_READ_TIMEOUT_MS: u64 = 10_000;
