//! The router process: [`RouterNode`] (its member of the mount-table Raft
//! group) and the gRPC server that exposes it ([`serve`]): `RouterAdmin`
//! for administrators and clients, `Namespace` for clients of the
//! federated namespace, and `Raft` for the other routers, on one port,
//! over mutual TLS unless the router runs `--insecure`; Hadoop's own RPC
//! for the federated namespace on a port of its own
//! ([`hadoop_namespace`]).

pub mod hadoop_namespace;
pub mod http_pages;
pub mod nameservice_check;
pub mod nameservice_pages;
pub mod namespace_service;
pub mod node;
pub mod ownership_pusher;
pub mod router_metrics;
pub mod service;
pub mod status_pages;
pub mod token_issuer;
pub mod web_namespace;

use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;

use raftfs_proto::limits::MAX_RPC_BYTES;
use raftfs_proto::{codec, pb};
use raftfs_raft::{RaftService, ServeError};
use raftfs_trust::{Dialer, PeerRole};

pub use node::{RouterConfig, RouterNode, DEFAULT_SAFE_MODE_AFTER_MS};

use crate::group::{MountTableConfig, MountTableStateMachine};

/// How long the health monitor waits for a peer router's status.
const PEER_STATUS_TIMEOUT_MS: u64 = 500;

/// Serve `node` on `listener` until `shutdown` resolves.
///
/// Boxed, so that a crate awaiting it (the `raftfs` binary) calls this
/// crate's code instead of compiling its own copy of the whole server
/// (docs/architecture.md, "Build time"); only the boxing of `shutdown` is
/// generic.
pub fn serve(
    node: Arc<RouterNode>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> BoxFuture<'static, Result<(), ServeError>> {
    serve_boxed(node, listener, Box::pin(shutdown))
}

#[inline(never)]
fn serve_boxed(
    node: Arc<RouterNode>,
    listener: tokio::net::TcpListener,
    shutdown: BoxFuture<'static, ()>,
) -> BoxFuture<'static, Result<(), ServeError>> {
    Box::pin(serve_unboxed(node, listener, shutdown))
}

async fn serve_unboxed(
    node: Arc<RouterNode>,
    listener: tokio::net::TcpListener,
    shutdown: BoxFuture<'static, ()>,
) -> Result<(), ServeError> {
    let admin = pb::router_admin_server::RouterAdminServer::new(service::RouterAdminService { node: node.clone() })
        .max_decoding_message_size(MAX_RPC_BYTES)
        .max_encoding_message_size(MAX_RPC_BYTES);
    let raft = RaftService::<MountTableConfig, MountTableStateMachine> {
        raft: node.raft.clone(),
        snapshots: node.snapshots(),
        group: node.raft_group(),
        peer_role: PeerRole::Router,
        security: node.security.server.clone(),
        leader_contact: node.leader_contact.clone(),
    }
    .into_server();
    let namespace =
        pb::namespace_server::NamespaceServer::new(namespace_service::RouterNamespaceService { node: node.clone() })
            .max_decoding_message_size(MAX_RPC_BYTES)
            .max_encoding_message_size(MAX_RPC_BYTES);
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    node.security
        .server
        .apply(tonic::transport::Server::builder().tcp_nodelay(true))?
        .add_service(admin)
        .add_service(namespace)
        .add_service(raft)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await?;
    Ok(())
}

/// Whether the router at `addr` says it is healthy.
pub(crate) async fn peer_is_healthy(addr: &str, dialer: &Dialer) -> bool {
    let status = async {
        let ep = dialer
            .endpoint(addr, PeerRole::Router)
            .ok()?
            .connect_timeout(Duration::from_millis(PEER_STATUS_TIMEOUT_MS))
            .timeout(Duration::from_millis(PEER_STATUS_TIMEOUT_MS));
        let mut c = pb::router_admin_client::RouterAdminClient::new(ep.connect().await.ok()?);
        let reply = c.status(pb::RouterMessage::default()).await.ok()?.into_inner();
        let r: Result<crate::admin::RouterStatus, crate::RouterError> =
            codec::decode(&reply.data_bin, "router status").ok()?;
        r.ok()
    };
    status.await.is_some_and(|s| s.health == "HEALTHY")
}
