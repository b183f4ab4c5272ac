//! Hadoop's own RPC in front of a raftfs namespace, so that unmodified
//! Hadoop clients (`hadoop fs`, Spark, `hdfs-native`) talk to raftfs as to
//! a NameNode.
//!
//! - [`wire`]: our prost definitions of Hadoop's messages.
//! - [`server`]: the IPC server (connection preamble, SASL negotiation of
//!   SIMPLE or TOKEN, connection context, framed calls and answers, pings,
//!   errors with the Java exception classes clients branch on), serving
//!   one [`IpcService`] ([`ipc_service`]): [`NamenodeService`] on members
//!   and routers, ClientDatanodeProtocol on DataNodes.
//! - [`client_protocol`]: ClientNamenodeProtocol's methods, each turned
//!   into a namespace [`Op`](raftfs_proto::Op) and its answer back into
//!   Hadoop's message; [`cluster_calls`] the calls about the cluster
//!   (getFsStats, getDatanodeReport, setSafeMode); `method_kinds` which
//!   methods answer as a feature that is off, or as not served yet.
//! - [`namespace`]: what the server runs calls against
//!   ([`HadoopNamespace`]), implemented by a metaserver member (its
//!   nameservice) and by a router (the federated namespace).
//!
//! What the server guarantees: every frame is bounded
//! ([`server::MAX_IPC_FRAME_BYTES`]), connections and calls in flight are
//! bounded, garbage or a wrong version closes the one connection with a
//! fatal answer where Hadoop gives one, and an unknown method or a
//! feature raftfs does not have is answered with the exception HDFS gives
//! (the connection goes on).

pub mod blocks;
pub mod client_protocol;
pub mod cluster_calls;
pub mod delegation_token;
pub mod digest_md5;
pub mod ids;
pub mod ipc_service;
mod method_kinds;
pub mod namenode_service;
pub mod namespace;
pub mod remote_error;
pub mod sasl;
pub mod server;
pub mod status;
pub mod wire;

pub use ipc_service::{IpcCaller, IpcService};
pub use namenode_service::NamenodeService;
pub use namespace::{Answered, DatanodeEndpoints, Endpoints, HaState, HadoopNamespace, ServerDefaults};
pub use remote_error::RemoteError;
pub use server::{serve, MAX_IPC_FRAME_BYTES};
