//! The member process: [`Member`] (storage + Raft) and the gRPC server that
//! exposes it ([`serve`]): the `Namespace` service for clients and the
//! `Raft` service for peers, on one port.

pub mod admin;
pub mod audit;
pub mod block_access;
#[cfg(test)]
mod call_future_sizes;
mod call_observation;
pub mod coalesce;
pub use raftfs_raft::cpu;
pub(crate) mod data;
pub mod datanode_service;
mod delegation_keeper;
pub mod failpoint;
pub mod groups;
pub mod hadoop_namespace;
pub mod http_pages;
/// A member's health checks live in the Raft glue (routers have them too).
pub use raftfs_raft::health;
/// A member's directory and VERSION file are the Raft glue's (routers have them too).
pub use raftfs_raft::layout;
pub mod member;
pub mod member_info;
pub mod member_metrics;
pub mod open_files;
pub mod proposer;
pub mod read_index;
pub mod service;
pub mod status_pages;
pub mod web_namespace;

use futures::future::BoxFuture;
use std::net::SocketAddr;
use std::sync::Arc;

pub use data::DEFAULT_LEASE_HARD_LIMIT_MS;
pub use member::{format_member, Member, MemberConfig, RaftTimings, StoreKind};

use raftfs_proto::limits::MAX_RPC_BYTES;
use raftfs_proto::pb;

use crate::raft::RaftService;
pub use raftfs_raft::ServeError;

/// Most concurrent streams one client connection may open.
pub const MAX_CONCURRENT_STREAMS_PER_CONNECTION: u32 = 1024;

/// Serve `member` on `listener` until `shutdown` resolves: mutual TLS with
/// the member's certificate unless it runs `--insecure`.
///
/// Boxed, so that a crate awaiting it (the `raftfs` binary) calls this
/// crate's code instead of compiling its own copy of the whole server
/// (docs/architecture.md, "Build time"); only the boxing of `shutdown` is
/// generic.
pub fn serve(
    member: Arc<Member>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> BoxFuture<'static, Result<(), ServeError>> {
    serve_boxed(member, listener, Box::pin(shutdown))
}

#[inline(never)]
fn serve_boxed(
    member: Arc<Member>,
    listener: tokio::net::TcpListener,
    shutdown: BoxFuture<'static, ()>,
) -> BoxFuture<'static, Result<(), ServeError>> {
    Box::pin(serve_unboxed(member, listener, shutdown))
}

async fn serve_unboxed(
    member: Arc<Member>,
    listener: tokio::net::TcpListener,
    shutdown: BoxFuture<'static, ()>,
) -> Result<(), ServeError> {
    let ns = pb::namespace_server::NamespaceServer::new(service::NamespaceService { member: member.clone() })
        .max_decoding_message_size(MAX_RPC_BYTES)
        .max_encoding_message_size(MAX_RPC_BYTES);
    let dn = pb::datanode_protocol_server::DatanodeProtocolServer::new(datanode_service::DatanodeService::new(
        member.clone(),
    ))
    .max_decoding_message_size(MAX_RPC_BYTES)
    .max_encoding_message_size(MAX_RPC_BYTES);
    let raft = RaftService {
        raft: member.raft.clone(),
        snapshots: member.snapshots(),
        group: member.raft_group(),
        peer_role: raftfs_trust::PeerRole::Member,
        security: member.security.server.clone(),
        leader_contact: Default::default(),
    }
    .into_server();
    // The builder's tcp_nodelay applies only to listeners it binds itself:
    // set it on our incoming sockets too, or Nagle + delayed ACK add ~40 ms
    // to every small RPC.
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let builder = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS_PER_CONNECTION);
    member
        .security
        .server
        .apply(builder)?
        .add_service(ns)
        .add_service(dn)
        .add_service(raft)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await?;
    Ok(())
}

/// Bind `addr` (for callers that want the error before spawning).
pub async fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await
}
